"""Code-Feedback (multi-turn code assistant chats) -> ADP.

An assistant turn with a fenced code block becomes a code_action (the first block; the
prose before it is the description); `Execution result:` turns are environment output;
a final prose turn is the finish message, else a success closing is appended.
"""

from __future__ import annotations

from curate_operators.agent.converters._common_code import assistant_event, finish_or_close
from curate_operators.agent.converters._events import text_obs, trajectory, turns
from curate_operators.agent.converters._model_text import Turns

MODEL_TEXT = Turns("messages")

_RESULT = "Execution result: \n"


def convert(record: dict, fallback_id: str) -> dict:
    conv = turns(record, "messages")
    traj_id = str(record.get("id") if record.get("id") is not None else fallback_id)
    events = []
    for turn in conv:
        text = turn["content"]
        if turn.get("role") == "assistant":
            events.append(assistant_event(text))
        elif text.startswith(_RESULT):
            events.append(text_obs(text[len(_RESULT):], source="environment"))
        else:
            events.append(text_obs(text))
    return trajectory(traj_id, finish_or_close(traj_id, events))
