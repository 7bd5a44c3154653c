"""AgentInstruct OS (bash) -> ADP: `Act: bash` blocks become code_action, answers solution messages."""

from __future__ import annotations

import re

from curate_operators.agent.converters._events import code, message, text_obs, trajectory, turns
from curate_operators.agent.converters._model_text import Turns

MODEL_TEXT = Turns("conversations")

_PROBLEM = "Now, my problem is:\n\n"
_ANSWER_FORMAT = ("\n\nIf you think you have got the answer to the question, you should print like this:"
                  "\n\n<solution> Your solution here </solution>")
_OUTPUT = "The output of the OS:\n"
_TURN = re.compile(r"^\s*Think:\s*(?P<thought>.*?)\n\nAct:\s*(?P<act>.*)$", re.DOTALL)
_BASH = re.compile(r"^bash\s*```(?:bash|sh)?\n(?P<code>.*?)\n?```\s*$", re.DOTALL)
_ANSWER = re.compile(r"^answer\((?P<answer>.*)\)\s*$", re.DOTALL)


def convert(record: dict, fallback_id: str) -> dict:
    conv = turns(record)
    traj_id = str(record.get("id") or fallback_id)
    last_agent = max((i for i, t in enumerate(conv) if t.get("role") != "user"), default=-1)
    events = []
    for i, turn in enumerate(conv):
        text = turn["content"]
        if turn.get("role") == "user":
            if i == 0 and _PROBLEM in text:
                events.append(text_obs(text.split(_PROBLEM, 1)[1] + _ANSWER_FORMAT))
            elif text.startswith(_OUTPUT):
                events.append(text_obs(text[len(_OUTPUT):], source="environment"))
            else:
                events.append(text_obs(text))
            continue
        m = _TURN.match(text)
        act = m["act"].strip() if m else ""
        if m and (b := _BASH.match(act)):
            events.append(code("bash", b["code"], m["thought"]))
        elif m and (a := _ANSWER.match(act)):
            answer = f"<solution> {a['answer']} </solution>"
            events.append(message(f"<finish> {answer} </finish>" if i == last_agent else answer, m["thought"]))
        elif m and act == "finish":
            events.append(message("<finish> </finish>", m["thought"]))
        else:
            events.append(message(text))
    return trajectory(traj_id, events)
