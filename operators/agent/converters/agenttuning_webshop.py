"""AgentInstruct WebShop -> ADP: `search[...]` and `click[...]` become api_action calls, the
reasoning before the action their thought (see marked_action for how the action is found)."""

from __future__ import annotations

import re

from curate_operators.agent.converters._events import (
    Turn,
    Unconvertible,
    agenttuning,
    api,
    marked_action,
    message,
    text_obs,
)
from curate_operators.agent.converters._model_text import Turns

MODEL_TEXT = Turns("conversations")

# The reference drops the action-format instructions from the first prompt.
_FORMAT_RULES = "You can use search action if search is available."
# WebShop's two actions; the argument runs to the last "]" of the line (product options hold
# brackets), and the action may stand in a fence.
_ACTION = re.compile(r"\s*`*\s*(?P<name>search|click)\s*\[(?P<arg>.*)\]")
_PARAM = {"search": "keywords", "click": "element"}


def _user(turn: Turn) -> dict:
    text = turn.text
    if turn.index == 0 and _FORMAT_RULES in text:
        text = text[: text.index(_FORMAT_RULES)]
    return text_obs(text)


def _agent(turn: Turn) -> dict:
    found = marked_action(turn.text, "Action:", _ACTION)
    if found is None:
        if "Action:" in turn.text:
            raise Unconvertible(f"turn {turn.index}: no WebShop action (search[...] or click[...]) after 'Action:'")
        return message(turn.text)
    thought, act = found
    return api(act["name"], {_PARAM[act["name"]]: f'"{act["arg"]}"'}, thought)


def convert(record: dict, fallback_id: str) -> dict:
    return agenttuning(record, fallback_id, _user, _agent, close=True)
