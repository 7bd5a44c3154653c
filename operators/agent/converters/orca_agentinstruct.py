"""Orca AgentInstruct (instruction-following chats) -> ADP: user turns and assistant messages;
the last assistant message is the finish message."""

from __future__ import annotations

from curate_operators.agent.converters._common_code import finish_or_close
from curate_operators.agent.converters._events import message, text_obs, trajectory, turns
from curate_operators.agent.converters._model_text import Turns

MODEL_TEXT = Turns("conversations")


def convert(record: dict, fallback_id: str) -> dict:
    conv = turns(record)
    traj_id = str(record.get("id") or fallback_id)
    events = []
    for turn in conv:
        role, text = turn.get("role"), turn["content"]
        if role == "user":
            events.append(text_obs(text))
        elif role == "assistant":
            events.append(message(text))
        elif role == "system" and text:
            events.append(text_obs(text))
    return trajectory(traj_id, finish_or_close(traj_id, events))
