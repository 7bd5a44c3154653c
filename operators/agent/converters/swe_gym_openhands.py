"""SWE-Gym OpenHands sampled trajectories (OpenAI tool-call messages) -> ADP.

`execute_bash` calls become bash code_action, `finish` the finish message, other tools
api_action; tool results are environment output. Run metadata goes to `details`.
"""

from __future__ import annotations

import json

from curate_operators.agent.converters._events import closing, trajectory
from curate_operators.agent.converters._openai_messages import messages_to_events
from curate_operators.agent.converters._model_text import Turns

MODEL_TEXT = Turns("messages")


_TOOL_HINT = " with `python <filename.py>` using the BashTool"


def _detail(value) -> str:
    return json.dumps(value, indent=2) if isinstance(value, (dict, list)) else str(value)


def convert(record: dict, fallback_id: str) -> dict:
    traj_id = str(record.get("instance_id") or record.get("id") or fallback_id)
    events = messages_to_events(record.get("messages"), drop_system=True, strip_prefix="OBSERVATION:\n")
    if events and events[0]["class_"] == "text_observation":
        # The reference drops the tool name from the task text (the SFT styles name their own tools).
        events[0]["content"] = events[0]["content"].replace(_TOOL_HINT, "")
    if not (events and events[-1]["class_"] == "message_action" and events[-1]["content"].startswith("<finish>")):
        events += closing(traj_id, message_in_description=False)
    details = {k: _detail(record[k]) for k in ("run_id", "resolved", "tools", "test_result") if k in record}
    return trajectory(traj_id, events, details)
