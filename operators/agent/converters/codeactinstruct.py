"""CodeActInstruct -> ADP: `<execute>` blocks become python code_action, `<solution>` answers messages.

The system prompt is dropped (the SFT side brings its own), except its budget sentence
("You have N chances ..."), which the reference appends to the task.
"""

from __future__ import annotations

import re

from curate_operators.agent.converters._events import code, message, text_obs, trajectory, turns
from curate_operators.agent.converters._model_text import Turns

MODEL_TEXT = Turns("conversations")

_BUDGET = re.compile(r"You have \d+ chances to interact with the environment or propose a solution\. "
                     r"You can only propose a solution \d+ times\.")
_EXECUTE = re.compile(r"<execute>(?P<code>.*?)</execute>", re.DOTALL)
_SOLUTION = re.compile(r"<solution>(?P<answer>.*?)</solution>", re.DOTALL)


def convert(record: dict, fallback_id: str) -> dict:
    conv = turns(record)
    traj_id = str(record.get("id") or fallback_id)
    budget = ""
    last_agent = max((i for i, t in enumerate(conv) if t.get("role") == "assistant"), default=-1)
    events = []
    for i, turn in enumerate(conv):
        text, role = turn["content"], turn.get("role")
        if role == "system":
            m = _BUDGET.search(text)
            budget = "\n\n" + m.group(0) if m else ""
        elif role == "user":
            if text.startswith("Task:\n"):
                events.append(text_obs(text[len("Task:\n"):] + budget))
            else:
                events.append(text_obs(text.removeprefix("Observation:\n")))
        elif m := _EXECUTE.search(text):
            events.append(code("python", m["code"].strip(), text[: m.start()].strip()))
        elif m := _SOLUTION.search(text):
            answer = f"<solution> {m['answer'].strip()} </solution>"
            events.append(message(f"<finish> {answer} </finish>" if i == last_agent else answer,
                                  text[: m.start()].strip()))
        else:
            events.append(message(text))
    return trajectory(traj_id, events)
