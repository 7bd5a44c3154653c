"""AgentInstruct knowledge-graph (Freebase) -> ADP: KB tool calls become api_action calls."""

from __future__ import annotations

import re

from curate_operators.agent.converters._events import Turn, Unconvertible, agenttuning, api, message, text_obs
from curate_operators.agent.converters._model_text import Turns

MODEL_TEXT = Turns("conversations")

_SIGNATURES = {
    "get_relations": ("variable",),
    "get_neighbors": ("variable", "relation"),
    "intersection": ("variable1", "variable2"),
    "get_attributes": ("variable",),
    "argmax": ("variable", "attribute"),
    "argmin": ("variable", "attribute"),
    "count": ("variable",),
}
# The tool list of the first prompt is dropped (the SFT side documents the API itself).
_TOOL_LIST = re.compile(r"\n\n1\. get_relations.*?\n\n7\. count\(.*?belonging to the variable\.", re.DOTALL)
_TURN = re.compile(r"^\s*Thought:\s*(?P<thought>.*?)\s*\n"
                   r"(?:Action:\s*(?P<action>.*?)|Final Answer:\s*(?P<answer>.*?))\s*$", re.DOTALL)
_CALL = re.compile(r"^(\w+)\((.*)\)$", re.DOTALL)


def _instruction(text: str) -> str:
    text = _TOOL_LIST.sub("", text)
    text = re.sub(r"Final Answer: (#\w+)", r"<solution> \1 </solution>", text)
    text = text.replace("\n\nYou can only take ONE action", "\nYou can only take ONE action")
    return text + "\n\nOk? Understood?"


def _call(action: str, description: str) -> dict:
    m = _CALL.match(action)
    if not m or m[1] not in _SIGNATURES:
        raise Unconvertible(f"unknown KG action {action!r}")
    args = [a.strip() for a in m[2].split(",")] if m[2].strip() else []
    params = _SIGNATURES[m[1]]
    if len(args) != len(params):
        raise Unconvertible(f"{m[1]} takes {len(params)} arguments, got {action!r}")
    return api(m[1], {p: repr(a) for p, a in zip(params, args)}, description)


def _user(turn: Turn) -> dict:
    text = turn.text
    if turn.index == 0:
        text = _instruction(text)
    elif text.startswith("Observation:"):
        text = text[len("Observation:"):]
    return text_obs(text)


def _agent(turn: Turn) -> dict:
    m = _TURN.match(turn.text)
    if m is None:
        # The acknowledgement of the instruction is recorded as the agent speaking.
        return text_obs(turn.text, source="agent")
    if m["action"] is not None:
        return _call(m["action"], m["thought"])
    return message(f"<solution> {m['answer']} </solution>", m["thought"])


def convert(record: dict, fallback_id: str) -> dict:
    return agenttuning(record, fallback_id, _user, _agent, close=False)
