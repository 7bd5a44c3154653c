"""Synatra (synthetic single-step web actions) -> ADP: the page's accessibility tree plus the past
actions become a web_observation, the predicted call an api_action with its comments as the thought.
The action is the response's first call of a Synatra action; prose and other calls around it are
reasoning (only `#` comments become the thought, as in the reference)."""

from __future__ import annotations

import ast
import re

from curate_operators.agent.converters._events import Unconvertible, api, text_obs, trajectory, web_obs
from curate_operators.agent.converters._model_text import Field

MODEL_TEXT = Field("response")

_INSTRUCTION = "Generate the next action given the an objective, the current web page, and previous actions. "
_WEBSITE = re.compile(r'^# website\nwebsite = "(?P<v>.*?)"$', re.MULTILINE)
_OBSERVATION = re.compile(r'# observation of the current web page\nobservation = """(?P<v>.*?)"""', re.DOTALL)
_OBJECTIVE = re.compile(r'^# objective\nobjective = "(?P<v>.*)"$', re.MULTILINE)
_PAST = re.compile(r"# past actions\n(?P<v>def solve\(\):.*)$", re.DOTALL)
_CALL = re.compile(r"^(?P<fn>\w+)\((?P<args>.*)\)$")
# Synatra's action space (WebArena's, as Python calls). Other calls in a response are not the
# action: models write helper calls in their reasoning too.
ACTIONS = {"click", "hover", "type", "press", "scroll", "new_tab", "tab_focus", "close_tab", "goto", "go_back",
           "go_forward", "stop"}


def _field(pattern: re.Pattern, prompt: str, name: str) -> str:
    m = pattern.search(prompt)
    if m is None:
        raise Unconvertible(f"prompt has no {name}")
    return m["v"]


def parse_call(line: str) -> tuple[str, dict]:
    """`click(element_id="93")` -> ("click", {"bid": '"93"'}): argument values keep their source text."""
    m = _CALL.match(line.strip())
    if m is None:
        raise Unconvertible(f"not a function call: {line!r}")
    try:
        call = ast.parse(line.strip(), mode="eval").body
    except SyntaxError as e:
        raise Unconvertible(f"unparseable action {line!r}: {e.msg}") from None
    src = line.strip()
    kwargs = {("bid" if k.arg == "element_id" else k.arg): ast.get_source_segment(src, k.value) for k in call.keywords}
    for i, a in enumerate(call.args):
        kwargs[f"arg{i}"] = ast.get_source_segment(src, a)
    return m["fn"], kwargs


def _thought(comments: list[str]) -> str:
    out = []
    for line in comments:
        if line.startswith("# sub-task") and not line.endswith((".", "!", "?")):
            line += "."
        out.append(line + "\n\n")
    return "".join(out)


def convert(record: dict, fallback_id: str) -> dict:
    prompt, response = record.get("prompt"), record.get("response")
    if not isinstance(prompt, str) or not isinstance(response, str):
        raise Unconvertible("record needs string 'prompt' and 'response'")
    objective = _field(_OBJECTIVE, prompt, "objective")
    website = _field(_WEBSITE, prompt, "website")
    past = _field(_PAST, prompt, "past actions").replace("element_id=", "bid=")
    axtree = _field(_OBSERVATION, prompt, "observation") + "\n\n# Previous Actions\n" + past
    lines = response.split("\n")
    comments = [line for line in lines if line.startswith("#")]
    # A call may stand in a fence or in backticks; the first call of an action is the action.
    calls = [code for line in lines
             if not line.startswith("#") and _CALL.match(code := line.strip().strip("`").strip())]
    action = next((c for c in calls if _CALL.match(c)["fn"] in ACTIONS), None)
    if action is None:
        found = f" (found {', '.join(repr(c[:80]) for c in calls[:3])})" if calls else ""
        raise Unconvertible(f"response has no call of a Synatra action{found}")
    fn, kwargs = parse_call(action)
    traj_id = str(record.get("id") if record.get("id") is not None else fallback_id)
    events = [
        text_obs(f"{_INSTRUCTION}\n\nObjective: {objective}"),
        web_obs(axtree=axtree, url=""),
        api(fn, kwargs, _thought(comments)),
    ]
    return trajectory(traj_id, events, {"task_description": objective, "website": website})
