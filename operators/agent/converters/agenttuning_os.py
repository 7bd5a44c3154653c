"""AgentInstruct OS (bash) -> ADP: `Act: bash` blocks become code_action, answers solution messages."""

from __future__ import annotations

import re

from curate_operators.agent.converters._events import Turn, agenttuning, code, message, text_obs
from curate_operators.agent.converters._model_text import Turns

MODEL_TEXT = Turns("conversations")

_PROBLEM = "Now, my problem is:\n\n"
_ANSWER_FORMAT = ("\n\nIf you think you have got the answer to the question, you should print like this:"
                  "\n\n<solution> Your solution here </solution>")
_OUTPUT = "The output of the OS:\n"
_TURN = re.compile(r"^\s*Think:\s*(?P<thought>.*?)\n\nAct:\s*(?P<act>.*)$", re.DOTALL)
_BASH = re.compile(r"^bash\s*```(?:bash|sh)?\n(?P<code>.*?)\n?```\s*$", re.DOTALL)
_ANSWER = re.compile(r"^answer\((?P<answer>.*)\)\s*$", re.DOTALL)


def _user(turn: Turn) -> dict:
    text = turn.text
    if turn.index == 0 and _PROBLEM in text:
        return text_obs(text.split(_PROBLEM, 1)[1] + _ANSWER_FORMAT)
    if text.startswith(_OUTPUT):
        return text_obs(text[len(_OUTPUT):], source="environment")
    return text_obs(text)


def _agent(turn: Turn) -> dict:
    m = _TURN.match(turn.text)
    act = m["act"].strip() if m else ""
    if m and (b := _BASH.match(act)):
        return code("bash", b["code"], m["thought"])
    if m and (a := _ANSWER.match(act)):
        answer = f"<solution> {a['answer']} </solution>"
        return message(f"<finish> {answer} </finish>" if turn.last else answer, m["thought"])
    if m and act == "finish":
        return message("<finish> </finish>", m["thought"])
    return message(turn.text)


def convert(record: dict, fallback_id: str) -> dict:
    return agenttuning(record, fallback_id, _user, _agent)
