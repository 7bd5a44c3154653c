"""AgentInstruct ALFWorld -> ADP: household commands become api_action calls of the ALFWorld API."""

from __future__ import annotations

import re

from curate_operators.agent.converters._events import Turn, Unconvertible, agenttuning, api, message, text_obs
from curate_operators.agent.converters._model_text import Turns

MODEL_TEXT = Turns("conversations")

# The reference drops the THOUGHT/ACTION format instructions (the SFT side has its own) and
# ends the instruction with a confirmation question.
_FORMAT_RULES = re.compile(r' You should choose from two actions: "THOUGHT" or "ACTION"'
                           r'.*?ACTION: your next action\n"\. ', re.DOTALL)
_TURN = re.compile(r"^\s*(?:THOUGHT:\s*(?P<thought>.*?)\s*)?ACTION:\s*(?P<action>.*?)\s*$", re.DOTALL)

# command pattern -> (function, parameter names), tried in order.
_COMMANDS = [
    (re.compile(r"^go to (.+)$"), "go", ("location",)),
    (re.compile(r"^take (.+) from (.+)$"), "take", ("item", "source")),
    (re.compile(r"^put (.+) in/on (.+)$"), "put", ("item", "target")),
    (re.compile(r"^open (.+)$"), "open", ("obj",)),
    (re.compile(r"^close (.+)$"), "close", ("obj",)),
    (re.compile(r"^heat (.+) with (.+)$"), "heat", ("item", "appliance")),
    (re.compile(r"^cool (.+) with (.+)$"), "cool", ("item", "appliance")),
    (re.compile(r"^clean (.+) with (.+)$"), "clean", ("item", "appliance")),
    (re.compile(r"^use (.+)$"), "use", ("obj",)),
    (re.compile(r"^toggle (.+)$"), "use", ("obj",)),
    (re.compile(r"^examine (.+)$"), "examine", ("obj",)),
    (re.compile(r"^look at (.+) under (.+)$"), "look_at_under", ("item", "reference")),
    (re.compile(r"^inventory$"), "inventory", ()),
    (re.compile(r"^look$"), "look", ()),
]


def command_call(command: str, description: str) -> dict:
    for pattern, function, params in _COMMANDS:
        m = pattern.match(command)
        if m:
            return api(function, {p: f'"{v}"' for p, v in zip(params, m.groups())}, description)
    raise Unconvertible(f"unknown ALFWorld command {command!r}")


def _user(turn: Turn) -> dict:
    text = turn.text
    if turn.index == 0:
        text = _FORMAT_RULES.sub("\n", text) + "\n\nOk? Understood?"
    return text_obs(text)


def _agent(turn: Turn) -> dict:
    m = _TURN.match(turn.text)
    return command_call(m["action"], m["thought"] or "") if m else message(turn.text)


def convert(record: dict, fallback_id: str) -> dict:
    return agenttuning(record, fallback_id, _user, _agent, close=True)
