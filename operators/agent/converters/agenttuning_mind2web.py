"""AgentInstruct Mind2Web -> ADP: one multiple-choice step; the chosen answer is the finish message,
the reasoning before it the thought (see marked_action for how the answer is found)."""

from __future__ import annotations

import re

from curate_operators.agent.converters._events import Turn, Unconvertible, agenttuning, marked_action, message, text_obs
from curate_operators.agent.converters._model_text import Turns

MODEL_TEXT = Turns("conversations")

# The answer: a choice letter on a line of its own, then the operation and its value, each on the
# next line ("B.\nAction: TYPE\nValue: Chicago"); the reference keeps these lines as the answer.
_ANSWER = re.compile(r"\s*[A-Z]\.?(?:[ \t]*\n[ \t]*Action:[ \t]*[A-Z]+(?:[ \t]*\n[ \t]*Value:[^\n]*)?)?"
                     r"(?=[ \t]*(?:\n|$))")


def _agent(turn: Turn) -> dict:
    if found := marked_action(turn.text, "Answer:", _ANSWER):
        thought, answer = found
        return message(f"<finish> {answer[0].strip()} </finish>", thought)
    if "Answer:" in turn.text:
        raise Unconvertible(f"turn {turn.index}: no choice letter (e.g. 'B.') on its own line after 'Answer:'")
    return message(turn.text)


def convert(record: dict, fallback_id: str) -> dict:
    return agenttuning(record, fallback_id, lambda turn: text_obs(turn.text), _agent)
