"""AgentInstruct Mind2Web -> ADP: one multiple-choice step; the chosen answer is the finish message."""

from __future__ import annotations

import re

from operators.agent.converters._events import message, text_obs, trajectory, turns

_TURN = re.compile(r"^\s*Thought:\s*(?P<thought>.*?)\s*\nAnswer:\s*(?P<answer>.*?)\s*$", re.DOTALL)


def convert(record: dict, fallback_id: str) -> dict:
    conv = turns(record)
    traj_id = str(record.get("id") or fallback_id)
    events = []
    for turn in conv:
        text = turn["content"]
        if turn.get("role") == "user":
            events.append(text_obs(text))
        elif m := _TURN.match(text):
            events.append(message(f"<finish> {m['answer']} </finish>", m["thought"]))
        else:
            events.append(message(text))
    return trajectory(traj_id, events)
