"""SWE-smith (SWE-agent trajectories with `<function=...>` calls) -> ADP.

The system prompt is dropped (the SFT side brings its own); `OBSERVATION:` turns are
environment output; a success closing follows the final submit.
"""

from __future__ import annotations

from curate_operators.agent.converters._events import closing, message, text_obs, trajectory, turns
from curate_operators.agent.converters._function_calls import call_event, split_call
from curate_operators.agent.converters._model_text import Turns

MODEL_TEXT = Turns("messages")

_OBSERVATION = "OBSERVATION:\n"


def convert(record: dict, fallback_id: str) -> dict:
    conv = turns(record, "messages")
    traj_id = str(record.get("id") or fallback_id)
    events = []
    for turn in conv:
        role, text = turn.get("role"), turn["content"]
        if role == "system":
            continue
        if role == "user":
            if text.startswith(_OBSERVATION):
                events.append(text_obs(text[len(_OBSERVATION):], source="environment"))
            else:
                events.append(text_obs(text))
            continue
        call = split_call(text)
        events.append(call_event(*call) if call else message(text))
    return trajectory(traj_id, events + closing(traj_id, message_in_description=False))
