"""AgentInstruct DB (MySQL) -> ADP: SQL operations become code_action, the final answer a finish message."""

from __future__ import annotations

import re

from curate_operators.agent.converters._events import code, message, text_obs, trajectory, turns
from curate_operators.agent.converters._model_text import Turns

MODEL_TEXT = Turns("conversations")

# The reference rewrites the prompt's action formats into the tags its SFT renderings use.
_PROMPT_REWRITES = (
    ("Action: Operation\n```sql\nSELECT * FROM table WHERE condition;\n```",
     "\n<execute_mysql>\nSELECT * FROM table WHERE condition;\n</excute_mysql>"),
    ('Action: Answer\nFinal Answer: ["ANSWER1", "ANSWER2", ...]',
     '\n<solution> [\\"ANSWER1\\", \\"ANSWER2\\", ...] </solution>'),
    ("\nYour input will be raw MySQL response, you have to deal with it by yourself.", ""),
)
_OPERATION = re.compile(r"^(?P<thought>.*?)Action: Operation\s*```sql\n?(?P<sql>.*?)\n?```\s*$", re.DOTALL)
_ANSWER = re.compile(r"^(?P<thought>.*?)Action: Answer\s*Final Answer:\s*(?P<answer>.*?)\s*$", re.DOTALL)


def convert(record: dict, fallback_id: str) -> dict:
    conv = turns(record)
    traj_id = str(record.get("id") or fallback_id)
    last_agent = max((i for i, t in enumerate(conv) if t.get("role") != "user"), default=-1)
    events = []
    for i, turn in enumerate(conv):
        text = turn["content"]
        if turn.get("role") == "user":
            if i == 0:
                for old, new in _PROMPT_REWRITES:
                    text = text.replace(old, new)
                text += "\n\nOk? Understood?"
            # Turns that answer an SQL operation are the database speaking.
            after_sql = bool(events) and events[-1]["class_"] == "code_action"
            events.append(text_obs(text, source="environment" if after_sql else "user"))
            continue
        if m := _OPERATION.match(text):
            events.append(code("sql", m["sql"], m["thought"]))
        elif m := _ANSWER.match(text):
            answer = f"<solution> {m['answer']} </solution>"
            events.append(message(f"<finish> {answer} </finish>" if i == last_agent else answer, m["thought"]))
        else:
            events.append(message(text))
    return trajectory(traj_id, events)
