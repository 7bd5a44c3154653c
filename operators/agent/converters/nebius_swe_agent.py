"""Nebius SWE-agent trajectories (classic SWE-agent command interface) -> ADP.

The fenced command of each `ai` turn becomes an api_action when it is one of SWE-agent's
special commands (open, edit, find_file, ...), else a bash code_action; the prose before
it is the thought. Arguments keep the reference's rendering: strings quoted, line numbers
of open/goto as text, edit ranges as integers.
"""

from __future__ import annotations

import re

from curate_operators.agent.converters._events import Unconvertible, api, closing, code, message, text_obs, trajectory
from curate_operators.agent.converters._model_text import Turns

MODEL_TEXT = Turns("trajectory", text="text", model=("ai",))

# command -> parameters in signature order ("int:" marks integers written unquoted).
_COMMANDS = {
    "open": ("path", "raw:line_number"),
    "goto": ("raw:line_number",),
    "scroll_down": (),
    "scroll_up": (),
    "create": ("filename",),
    "submit": (),
    "search_dir": ("search_term", "dir"),
    "search_file": ("search_term", "file"),
    "find_file": ("file_name", "dir"),
}
_FENCE = re.compile(r"```(?:bash|sh)?\n(?P<cmd>.*?)\n?```", re.DOTALL)
_EDIT = re.compile(r"^edit (?P<start>\d+):(?P<end>\d+)\n(?P<text>.*?)end_of_edit\s*$", re.DOTALL)
_TOKEN = re.compile(r'"[^"]*"|\'[^\']*\'|\S+')
_DETAILS = ("model_name", "exit_status", "generated_patch", "eval_logs")


def _quoted(token: str) -> str:
    return token if token[:1] in "\"'" and token[-1:] == token[:1] and len(token) > 1 else f'"{token}"'


def command_event(command: str, thought: str) -> dict:
    if m := _EDIT.match(command):
        kwargs = {"start_line": int(m["start"]), "end_line": int(m["end"]),
                  "replacement_text": f'"{m["text"].strip()}\n"'}
        return api("edit", kwargs, thought)
    tokens = _TOKEN.findall(command)
    params = _COMMANDS.get(tokens[0]) if tokens else None
    if params is None or "\n" in command or len(tokens) - 1 > len(params):
        return code("bash", command, thought)
    kwargs = {}
    for param, token in zip(params, tokens[1:]):
        raw = param.startswith("raw:")
        kwargs[param.removeprefix("raw:")] = token if raw else _quoted(token)
    return api(tokens[0], kwargs, thought)


def convert(record: dict, fallback_id: str) -> dict:
    steps = record.get("trajectory")
    if not isinstance(steps, list) or not steps:
        raise Unconvertible("no 'trajectory' list")
    traj_id = str(record.get("instance_id") or record.get("id") or fallback_id)
    events = []
    for i, step in enumerate(steps):
        if not isinstance(step, dict):
            raise Unconvertible(f"trajectory[{i}] is not an object")
        role, text = step.get("role"), step.get("text")
        if role == "system":
            continue
        if not isinstance(text, str):
            raise Unconvertible(f"trajectory[{i}] has no string 'text'")
        if role == "user":
            events.append(text_obs(text))
            continue
        fences = list(_FENCE.finditer(text))
        if not fences:
            events.append(message(text))
            continue
        last = fences[-1]  # SWE-agent runs the last fenced block of a turn
        events.append(command_event(last["cmd"].strip(), text[: last.start()].strip()))
    details = {k: str(record[k]) for k in _DETAILS if record.get(k) is not None}
    return trajectory(traj_id, events + closing(traj_id, message_in_description=False), details)
