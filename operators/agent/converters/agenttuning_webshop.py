"""AgentInstruct WebShop -> ADP: `search[...]` and `click[...]` become api_action calls, the
reasoning before the action their thought (see marked_action for how the action is found)."""

from __future__ import annotations

import re

from curate_operators.agent.converters._events import (Unconvertible, api, closing, marked_action, message, text_obs,
                                                trajectory, turns)
from curate_operators.agent.converters._model_text import Turns

MODEL_TEXT = Turns("conversations")

# The reference drops the action-format instructions from the first prompt.
_FORMAT_RULES = "You can use search action if search is available."
# WebShop's two actions; the argument runs to the last "]" of the line (product options hold
# brackets), and the action may stand in a fence.
_ACTION = re.compile(r"\s*`*\s*(?P<name>search|click)\s*\[(?P<arg>.*)\]")
_PARAM = {"search": "keywords", "click": "element"}


def convert(record: dict, fallback_id: str) -> dict:
    conv = turns(record)
    traj_id = str(record.get("id") or fallback_id)
    events = []
    for i, turn in enumerate(conv):
        text = turn["content"]
        if turn.get("role") == "user":
            if i == 0 and _FORMAT_RULES in text:
                text = text[: text.index(_FORMAT_RULES)]
            events.append(text_obs(text))
            continue
        found = marked_action(text, "Action:", _ACTION)
        if found is None:
            if "Action:" in text:
                raise Unconvertible(f"turn {i}: no WebShop action (search[...] or click[...]) after 'Action:'")
            events.append(message(text))
            continue
        thought, act = found
        events.append(api(act["name"], {_PARAM[act["name"]]: f'"{act["arg"]}"'}, thought))
    return trajectory(traj_id, events + closing(traj_id, message_in_description=True))
