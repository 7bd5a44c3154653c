"""NNetNav (live web and WebArena) -> ADP. The raw data has one record per step (the chat
prompt of that step and the model output); consecutive records with the same `id` form one
trajectory: per step a web_observation (accessibility tree and URL) and the action taken, with
the model's reasoning before it as the thought.
"""

from __future__ import annotations

import re
from typing import Callable

from curate_operators.agent.converters._events import Unconvertible, api, message, text_obs, trajectory, web_obs
from curate_operators.agent.converters._model_text import Field

MODEL_TEXT = Field("output")

_OBSERVATION = re.compile(r"^OBSERVATION:\n(?P<axtree>.*)\nURL: (?P<url>.*?)\nOBJECTIVE: (?P<objective>.*?)\n"
                          r"PREVIOUS ACTIONS:\n", re.DOTALL)
_SUMMARY = "In summary, the next action I will perform is"
# A block of code: fenced in triple backticks (closed, or left open at the end of the output, as
# a model stopped at its end-of-turn token leaves it) or inline in single ones. A run of three or
# more backticks is one fence: models close blocks with extra ones (```stop [answer]``````), which
# must not open a block of their own that swallows the text up to the next fence.
_BLOCK = re.compile(r"`{3,}(?P<body>.*?)(?:`{3,}|$)|`(?P<inline>[^`\n]+)`", re.DOTALL)
_LANGUAGE = re.compile(r"^[ \t]*\w+[ \t]*\n")  # a fence's language tag line (```text)
# WebArena's prompt asks for the reasoning, then "In summary, the next action I will perform is"
# and the action in ``` (models also write "my next action should be" and the like). The
# reasoning itself may hold fenced blocks (page elements, earlier actions), so the action is the
# last block in the action grammar that such a phrase announces, else the last one in the grammar.
_ANNOUNCED = re.compile(r"next action\b[^`]{0,40}?\b(?:is|be)\s*:?\s*$", re.IGNORECASE)
_ACTION = re.compile(r"^(?P<name>[a-z_]+)\s*(?P<args>.*)$", re.DOTALL)
_BID = r"\[(?P<bid>[^\[\]]+)\]"
# WebArena's id-based action space: the arguments each action takes, in brackets. Typed text and
# stop answers may hold brackets themselves (the type flag, when present, is the last [0] or [1]).
_GRAMMAR = {
    "click": re.compile(_BID),
    "hover": re.compile(_BID),
    "type": re.compile(_BID + r"\s*\[(?P<text>.*?)\](?:\s*\[[01]\])?", re.DOTALL),
    "press": re.compile(r"\[(?P<key>[^\[\]]+)\]"),
    "scroll": re.compile(r"\[(?:direction=)?(?P<direction>up|down)\]"),
    "goto": re.compile(r"\[(?P<url>.+)\]"),
    "tab_focus": re.compile(r"\[(?P<index>\d+)\]"),
    "stop": re.compile(r"(?:\[(?P<answer>.*)\])?", re.DOTALL),
    **{name: re.compile("") for name in ("new_tab", "go_back", "go_forward", "close_tab")},
}


def _parse(block: str) -> tuple[str, dict] | None:
    """(name, arguments) of a fenced block in the WebArena grammar, else None."""
    m = _ACTION.match(block.strip())
    grammar = _GRAMMAR.get(m["name"]) if m else None
    args = grammar.fullmatch(m["args"]) if grammar else None
    return (m["name"], args.groupdict()) if args else None


def _parse_block(m: re.Match) -> tuple[str, dict] | None:
    if m["inline"] is not None:
        return _parse(m["inline"])
    tag = _LANGUAGE.match(m["body"])
    return _parse(m["body"]) or (_parse(m["body"][tag.end():]) if tag else None)


def _pick(output: str) -> tuple[re.Match, str, dict]:
    """The code block holding the step's action, with the action's name and arguments."""
    blocks = list(_BLOCK.finditer(output))
    actions = [(m, *parsed) for m in blocks if (parsed := _parse_block(m)) is not None]
    if not actions:
        found = ", ".join(repr((m["inline"] or m["body"]).strip()[:80]) for m in blocks[:3])
        raise Unconvertible("no WebArena action in a code block (``` or `) of the output"
                            + (f" (found {found})" if found else ""))
    announced = [a for a in actions if _ANNOUNCED.search(output, 0, a[0].start())]
    return (announced or actions)[-1]


def _step_action(name: str, args: dict, thought: str, last: bool) -> dict:
    """One WebArena action as an ADP event (BrowserGym-style function names)."""
    if name == "stop":
        answer = args["answer"] or ""
        return message(f"<finish> {answer} </finish>" if last else answer, thought)
    if name in ("click", "hover"):
        return api(name, {"bid": f'"{args["bid"]}"'}, thought)
    if name == "type":
        # The reference writes press_enter_after as "0" whatever the step said; kept for parity.
        return api("type", {"bid": f'"{args["bid"]}"', "text": f'"{args["text"]}"', "press_enter_after": "0"}, thought)
    if name == "scroll":
        return api("scroll", {"delta_x": 0, "delta_y": 500 if args["direction"] == "down" else -500}, thought)
    if name == "press":
        return api("keyboard_press", {"key": f'"{args["key"]}"'}, thought)
    if name == "goto":
        return api("goto", {"url": f'"{args["url"]}"'}, thought)
    if name == "tab_focus":
        return api("tab_focus", {"index": args["index"]}, thought)
    return api(name, {}, thought)


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
    block, name, args = _pick(output)
    # The thought is the reasoning before the action, as the reference keeps it.
    thought = output[: block.start()].replace(_SUMMARY, "").strip()
    return m["objective"], [web_obs(axtree=m["axtree"].strip(), url=m["url"]), _step_action(name, args, thought, last)]


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
