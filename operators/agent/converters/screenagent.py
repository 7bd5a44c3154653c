"""ScreenAgent (desktop GUI sessions; a record is a session's list of steps) -> ADP: one trajectory
per step, `<session_id>_<step>`, as the reference makes them: the English task as the user's
observation, then the English (edited) model response as a message, kept whole (its plan or
action JSON in a fence, with the reasoning around it). The Chinese fields and the screenshots
(`<image>` placeholders in the release) are not used, as in the reference.
"""

from __future__ import annotations

from curate_operators.agent.converters._events import Unconvertible, message, trajectory, unnamed_obs
from curate_operators.agent.converters._model_text import Field

RECORD = list
MODEL_TEXT = Field("LLM_response_editer_en")


def convert(steps: list, fallback_id: str) -> list[dict]:
    if not steps:
        raise Unconvertible("session without steps")
    out = []
    for i, step in enumerate(steps):
        task, response = (step.get("task_prompt_en"), step.get("LLM_response_editer_en")) if isinstance(step, dict) \
            else (None, None)
        if not isinstance(task, str) or not isinstance(response, str):
            raise Unconvertible(f"step {i}: needs string task_prompt_en and LLM_response_editer_en")
        session = step.get("session_id") if step.get("session_id") is not None else fallback_id
        out.append(trajectory(f"{session}_{i}", [unnamed_obs(task), message(response)]))
    return out
