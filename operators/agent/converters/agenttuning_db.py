"""AgentInstruct DB (MySQL) -> ADP: SQL operations become code_action, the final answer a finish message."""

from __future__ import annotations

import re

from curate_operators.agent.converters._events import Turn, agenttuning, code, message, text_obs
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


def _user(turn: Turn) -> dict:
    text = turn.text
    if turn.index == 0:
        for old, new in _PROMPT_REWRITES:
            text = text.replace(old, new)
        text += "\n\nOk? Understood?"
    # Turns that answer an SQL operation are the database speaking.
    after_sql = bool(turn.events) and turn.events[-1]["class_"] == "code_action"
    return text_obs(text, source="environment" if after_sql else "user")


def _agent(turn: Turn) -> dict:
    if m := _OPERATION.match(turn.text):
        return code("sql", m["sql"], m["thought"])
    if m := _ANSWER.match(turn.text):
        answer = f"<solution> {m['answer']} </solution>"
        return message(f"<finish> {answer} </finish>" if turn.last else answer, m["thought"])
    return message(turn.text)


def convert(record: dict, fallback_id: str) -> dict:
    return agenttuning(record, fallback_id, _user, _agent)
