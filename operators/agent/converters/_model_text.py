"""Model output as the model wrote it, whatever chat template the dataset left around it.

Releases differ in how they store a model turn: bare, or with the chat template's special
tokens still on (Llama-3 `<|start_header_id|>assistant<|end_header_id|>` ... `<|eot_id|>`,
ChatML `<|im_start|>assistant` ... `<|im_end|>`, Mistral `[INST] ... [/INST]` ... `</s>`,
Gemma `<start_of_turn>model` ... `<end_of_turn>`). A converter's module names where its model
text lies (`MODEL_TEXT`: a record field, or the model's turns of a list of turns), and the
registry hands the converter each such text unwrapped: the role header and everything from the
first end-of-turn token on removed. Templates trim the text they wrap (Llama-3's does), so the
whitespace between the tokens and the text is not the model's and goes too; a text without any
template token is left exactly as it is (the reference's outputs keep its spacing).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterator

# What may precede a model's text: a begin-of-sequence token, then the assistant header of a
# template (or a Mistral instruction block, whose answer follows `[/INST]`).
_HEAD = re.compile(
    r"^\s*(?:<s>|<\|begin_of_text\|>|<bos>)?\s*"
    r"(?:<\|start_header_id\|>\s*assistant\s*<\|end_header_id\|>|<\|im_start\|>\s*assistant\b|"
    r"<start_of_turn>\s*model\b|(?:\[INST\].*?)?\[/INST\])?",
    re.DOTALL)
# Where a model's turn ends, in the templates above (and `<|endoftext|>`, `<|end|>` of others).
_END = re.compile(r"<\|eot_id\|>|<\|eom_id\|>|<\|im_end\|>|</s>|<end_of_turn>|<\|end\|>|<\|endoftext\|>")


def unwrap(text: str) -> str:
    """`text` without the chat template around it (unchanged when it has no template token)."""
    head = _HEAD.match(text)
    end = _END.search(text, head.end())
    if not head.group(0).strip() and end is None:
        return text
    return text[head.end(): end.start() if end else len(text)].strip()


@dataclass(frozen=True)
class Field:
    """The model text is the record's field `key` (one model output per record)."""

    key: str

    def holders(self, record) -> Iterator[tuple[dict, str]]:
        for item in record if isinstance(record, list) else [record]:  # a record may be a list of steps
            if isinstance(item, dict) and isinstance(item.get(self.key), str):
                yield item, self.key


@dataclass(frozen=True)
class Turns:
    """The model texts are the `text` of the turns in `record[key]` whose `role` is a model's."""

    key: str
    text: str = "content"
    role: str = "role"
    model: tuple[str, ...] = ("assistant",)

    def holders(self, record: dict) -> Iterator[tuple[dict, str]]:
        turns = record.get(self.key)
        for turn in turns if isinstance(turns, list) else ():
            if isinstance(turn, dict) and turn.get(self.role) in self.model and isinstance(turn.get(self.text), str):
                yield turn, self.text


def unwrapped(record, where: Field | Turns):
    """`record` with its model texts unwrapped; copies only what it changes (the input stays as read)."""
    if isinstance(record, list):  # a session stored as its steps
        return [unwrapped(step, where) for step in record]
    if not isinstance(record, dict):
        return record
    out = dict(record)
    if isinstance(where, Turns) and isinstance(record.get(where.key), list):
        out[where.key] = [dict(t) if isinstance(t, dict) else t for t in record[where.key]]
    for holder, key in where.holders(out):
        holder[key] = unwrap(holder[key])
    return out
