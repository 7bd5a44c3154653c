"""SWE-Play trajectories (OpenHands agent chats with `<function=...>` calls in the text) -> ADP.

The system prompt is dropped; user turns are the task (user) or, after an action, its
`EXECUTION RESULT of [tool]:` output (environment, kept whole as the reference does). An
assistant turn with a complete call is an `execute_bash` code_action or an api_action, the text
before the call its thought and every argument text; a turn without one (the final, unterminated finish call included)
is a message. The record's category and source go to `details`.
"""

from __future__ import annotations

from curate_operators.agent.converters._events import Turn, message, text_obs, trajectory, turn_events, turns
from curate_operators.agent.converters._function_calls import call_event, split_call
from curate_operators.agent.converters._model_text import Turns

MODEL_TEXT = Turns("messages")

_RESULT = "EXECUTION RESULT of ["


def _user(turn: Turn) -> dict:
    return text_obs(turn.text, "environment" if turn.text.startswith(_RESULT) else "user")


def _agent(turn: Turn) -> dict:
    call = split_call(turn.text, closed=True, typed=False)
    return call_event(*call, bash_tools=("execute_bash",)) if call else message(turn.text.strip())


def convert(record: dict, fallback_id: str) -> dict:
    conv = turns(record, "messages")
    traj_id = str(record.get("id") if record.get("id") is not None else fallback_id)
    events = turn_events(conv, _user, _agent, user_roles=("user", "tool"), skip_roles=("system",))
    details = {k: str(record[k]) for k in ("category", "source") if record.get(k) is not None}
    return trajectory(traj_id, events, details)
