"""SWE-smith (SWE-agent trajectories with `<function=...>` calls) -> ADP.

The system prompt is dropped (the SFT side brings its own); `OBSERVATION:` turns are
environment output; a success closing follows the final submit.
"""

from __future__ import annotations

from curate_operators.agent.converters._events import Turn, closing, message, text_obs, trajectory, turn_events, turns
from curate_operators.agent.converters._function_calls import call_event, split_call
from curate_operators.agent.converters._model_text import Turns

MODEL_TEXT = Turns("messages")

_OBSERVATION = "OBSERVATION:\n"


def _user(turn: Turn) -> dict:
    if turn.text.startswith(_OBSERVATION):
        return text_obs(turn.text[len(_OBSERVATION):], source="environment")
    return text_obs(turn.text)


def _agent(turn: Turn) -> dict:
    call = split_call(turn.text)
    return call_event(*call) if call else message(turn.text)


def convert(record: dict, fallback_id: str) -> dict:
    conv = turns(record, "messages")
    traj_id = str(record.get("id") or fallback_id)
    events = turn_events(conv, _user, _agent, skip_roles=("system",))
    return trajectory(traj_id, events + closing(traj_id, message_in_description=False))
