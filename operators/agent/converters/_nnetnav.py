"""NNetNav (live web and WebArena) -> ADP. The raw data has one record per step (the chat
prompt of that step and the model output); consecutive records with the same `id` form one
trajectory: per step a web_observation (accessibility tree and URL) and the action taken.
"""

from __future__ import annotations

import re
from typing import Callable

from operators.agent.converters._events import Unconvertible, api, message, text_obs, trajectory, web_obs

_OBSERVATION = re.compile(r"^OBSERVATION:\n(?P<axtree>.*)\nURL: (?P<url>.*?)\nOBJECTIVE: (?P<objective>.*?)\n"
                          r"PREVIOUS ACTIONS:\n", re.DOTALL)
_HEADER = "<|start_header_id|>assistant<|end_header_id|>\n"
_SUMMARY = "In summary, the next action I will perform is"
_ACTION = re.compile(r"```(?P<action>.*?)```", re.DOTALL)
_ARGS = re.compile(r"\[(.*?)\]", re.DOTALL)


def _step_action(name: str, args: list[str], thought: str, last: bool) -> dict:
    """One WebArena action string as an ADP event (BrowserGym-style function names)."""
    quoted = [f'"{a}"' for a in args]
    if name == "stop":
        answer = args[0] if args else ""
        return message(f"<finish> {answer} </finish>" if last else answer, thought)
    if name == "click" and args:
        return api("click", {"bid": quoted[0]}, thought)
    if name == "hover" and args:
        return api("hover", {"bid": quoted[0]}, thought)
    if name == "type" and len(args) >= 2:
        # The reference writes press_enter_after as "0" whatever the step said; kept for parity.
        return api("type", {"bid": quoted[0], "text": quoted[1], "press_enter_after": "0"}, thought)
    if name == "scroll" and args:
        return api("scroll", {"delta_x": 0, "delta_y": 500 if args[0] == "down" else -500}, thought)
    if name == "press" and args:
        return api("keyboard_press", {"key": quoted[0]}, thought)
    if name == "goto" and args:
        return api("goto", {"url": quoted[0]}, thought)
    if name == "tab_focus" and args:
        return api("tab_focus", {"index": args[0]}, thought)
    if name in ("go_back", "go_forward", "new_tab", "close_tab"):
        return api(name, {}, thought)
    raise Unconvertible(f"unknown web action {name!r} with arguments {args!r}")


def _step(record: dict, last: bool) -> tuple[str, list[dict]]:
    messages = record.get("messages")
    if not isinstance(messages, list):
        raise Unconvertible("record has no 'messages' list")
    user = next((m.get("content") for m in messages if isinstance(m, dict) and m.get("role") == "user"), None)
    m = _OBSERVATION.match(user or "")
    if m is None:
        raise Unconvertible("user message has no OBSERVATION / URL / OBJECTIVE / PREVIOUS ACTIONS")
    output = record.get("output")
    if not isinstance(output, str):
        raise Unconvertible("record has no string 'output'")
    output = output.removeprefix(_HEADER).split("<|eot_id|>")[0]
    act = _ACTION.search(output)
    if act is None:
        raise Unconvertible("output has no ```action```")
    thought = output[: act.start()].replace(_SUMMARY, "").strip()
    action = act["action"].strip()
    name = action.split(" ", 1)[0].split("[", 1)[0].strip()
    event = _step_action(name, [a for a in _ARGS.findall(action)], thought, last)
    return m["objective"], [web_obs(axtree=m["axtree"].strip(), url=m["url"]), event]


def make(source: str) -> Callable[[list[dict], str], dict]:
    def convert(records: list[dict], fallback_id: str) -> dict:
        objective, events = None, []
        for i, record in enumerate(records):
            objective, step = _step(record, last=i == len(records) - 1)
            events += step
        head = text_obs(f"You are given the following objective: {objective}\nExamine the current web page and "
                        "perform the next appropriate action to move toward completing the objective.")
        traj_id = str(records[0].get("id") or fallback_id)
        return trajectory(traj_id, [head] + events, {"source": source})

    return convert
