"""Generic importer: OpenAI chat messages (`messages` with `tool_calls` and `tool` results) -> ADP.

Record: `{"id"?: ..., "messages": [{"role": system|user|assistant|tool, "content", "tool_calls"?}]}`.
`execute_bash`/`bash` calls become bash code_action, `execute_ipython_cell` python code_action,
`finish` the finish message, other tools api_action (arguments as kwargs). A final
assistant text turn becomes the finish message.
"""

from __future__ import annotations

from curate_operators.agent.converters._events import message, trajectory
from curate_operators.agent.converters._openai_messages import messages_to_events
from curate_operators.agent.converters._model_text import Turns

MODEL_TEXT = Turns("messages")


def mark_finish(events: list[dict]) -> list[dict]:
    last = events[-1] if events else None
    if last and last["class_"] == "message_action" and not last["content"].startswith("<finish>"):
        events[-1] = message(f"<finish> {last['content']} </finish>", last["description"])
    return events


def convert(record: dict, fallback_id: str) -> dict:
    traj_id = str(record.get("id") if record.get("id") is not None else fallback_id)
    events = messages_to_events(record.get("messages"), tool_names=True)
    return trajectory(traj_id, mark_finish(events))
