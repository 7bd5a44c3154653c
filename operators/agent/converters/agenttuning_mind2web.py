"""AgentInstruct Mind2Web -> ADP: one multiple-choice step; the chosen answer is the finish message,
the reasoning before it the thought (see marked_action for how the answer is found)."""

from __future__ import annotations

import re

from curate_operators.agent.converters._events import Unconvertible, marked_action, message, text_obs, trajectory, turns
from curate_operators.agent.converters._model_text import Turns

MODEL_TEXT = Turns("conversations")

# The answer: a choice letter on a line of its own, then the operation and its value, each on the
# next line ("B.\nAction: TYPE\nValue: Chicago"); the reference keeps these lines as the answer.
_ANSWER = re.compile(r"\s*[A-Z]\.?(?:[ \t]*\n[ \t]*Action:[ \t]*[A-Z]+(?:[ \t]*\n[ \t]*Value:[^\n]*)?)?"
                     r"(?=[ \t]*(?:\n|$))")


def convert(record: dict, fallback_id: str) -> dict:
    conv = turns(record)
    traj_id = str(record.get("id") or fallback_id)
    events = []
    for i, turn in enumerate(conv):
        text = turn["content"]
        if turn.get("role") == "user":
            events.append(text_obs(text))
        elif found := marked_action(text, "Answer:", _ANSWER):
            thought, answer = found
            events.append(message(f"<finish> {answer[0].strip()} </finish>", thought))
        elif "Answer:" in text:
            raise Unconvertible(f"turn {i}: no choice letter (e.g. 'B.') on its own line after 'Answer:'")
        else:
            events.append(message(text))
    return trajectory(traj_id, events)
