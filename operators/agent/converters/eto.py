"""ETO (exploration-based trajectory optimisation: WebShop, ScienceWorld, ALFWorld chats in
ShareGPT form) -> ADP: human turns are user observations, gpt turns messages with their
"Thought: ... Action: ..." text kept whole; the last gpt turn is the finish message."""

from __future__ import annotations

from curate_operators.agent.converters._events import Unconvertible, message, trajectory, unnamed_obs
from curate_operators.agent.converters.openai_chat import mark_finish
from curate_operators.agent.converters.sharegpt import turns
from curate_operators.agent.converters._model_text import Turns

MODEL_TEXT = Turns("conversations", text="value", role="from", model=("gpt",))


def convert(record: dict, fallback_id: str) -> dict:
    events = []
    for i, turn in turns(record):
        who, value = turn.get("from"), turn["value"]
        if who == "human":
            events.append(unnamed_obs(value))
        elif who == "gpt":
            events.append(message(value, ""))
        else:
            raise Unconvertible(f"conversations[{i}] has unknown speaker {who!r}")
    traj_id = str(record.get("id") if record.get("id") is not None else fallback_id)
    return trajectory(traj_id, mark_finish(events))
