"""SWE-Play trajectories (OpenHands agent chats with `<function=...>` calls in the text) -> ADP.

The system prompt is dropped; user turns are the task (user) or, after an action, its
`EXECUTION RESULT of [tool]:` output (environment, kept whole as the reference does). An
assistant turn with a complete call is an `execute_bash` code_action or an api_action, the text
before the call its thought and every argument text; a turn without one (the final, unterminated finish call included)
is a message. The record's category and source go to `details`.
"""

from __future__ import annotations

from curate_operators.agent.converters._events import message, text_obs, trajectory, turns
from curate_operators.agent.converters._function_calls import call_event, split_call
from curate_operators.agent.converters._model_text import Turns

MODEL_TEXT = Turns("messages")

_RESULT = "EXECUTION RESULT of ["


def convert(record: dict, fallback_id: str) -> dict:
    conv = turns(record, "messages")
    traj_id = str(record.get("id") if record.get("id") is not None else fallback_id)
    events = []
    for turn in conv:
        role, text = turn.get("role"), turn["content"]
        if role == "system":
            continue
        if role in ("user", "tool"):
            events.append(text_obs(text, "environment" if text.startswith(_RESULT) else "user"))
            continue
        call = split_call(text, closed=True, typed=False)
        events.append(call_event(*call, bash_tools=("execute_bash",)) if call else message(text.strip()))
    details = {k: str(record[k]) for k in ("category", "source") if record.get(k) is not None}
    return trajectory(traj_id, events, details)
