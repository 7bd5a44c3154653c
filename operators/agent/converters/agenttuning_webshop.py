"""AgentInstruct WebShop -> ADP: `search[...]` and `click[...]` become api_action calls."""

from __future__ import annotations

import re

from operators.agent.converters._events import (Unconvertible, api, closing, message, text_obs, trajectory,
                                                turns)

# The reference drops the action-format instructions from the first prompt.
_FORMAT_RULES = "You can use search action if search is available."
_TURN = re.compile(r"^\s*Thought:\s*(?P<thought>.*?)\s*Action:\s*(?P<action>.*?)\s*$", re.DOTALL)
_ACTION = re.compile(r"^(search|click)\[(.*)\]$", re.DOTALL)
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
        m = _TURN.match(text)
        if not m:
            events.append(message(text))
            continue
        act = _ACTION.match(m["action"])
        if not act:
            raise Unconvertible(f"turn {i}: unknown WebShop action {m['action']!r}")
        events.append(api(act[1], {_PARAM[act[1]]: f'"{act[2]}"'}, m["thought"]))
    return trajectory(traj_id, events + closing(traj_id, message_in_description=True))
