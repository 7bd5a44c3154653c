"""Shared pieces of the SFT exporters: finish messages, call rendering, turn assembly."""

from __future__ import annotations

import json
import re

_FINISH = re.compile(r"^<finish>(?P<said>.*)</finish>$", re.DOTALL)


class Skip(ValueError):
    """The trajectory cannot be rendered in this style; the message is the reason."""


def finish_text(event: dict) -> str | None:
    """The text inside `<finish> ... </finish>` of a finish message, else None."""
    if event["class_"] != "message_action":
        return None
    m = _FINISH.match(event["content"])
    return m["said"].strip() if m else None


def literal(value) -> str:
    """A kwarg value as Python source: ADP stores string arguments already quoted."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def call_source(function: str, kwargs: dict) -> str:
    return f"{function}({', '.join(f'{k}={literal(v)}' for k, v in kwargs.items())})"


def function_block(name: str, params: dict[str, str]) -> str:
    """`<function=NAME>` with one `<parameter=KEY>` block per argument (the XML call format)."""
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"<function={name}>\n{body}</function>"


def with_thought(thought: str | None, text: str) -> str:
    return f"{thought}\n\n{text}" if thought else text


def is_action(event: dict) -> bool:
    return event["class_"] in ("api_action", "code_action")


class Turns:
    """The conversation being rendered: consecutive events of the same side form one turn, unless
    the environment keeps every event its own turn (`separate`, as the reference renders toucan)."""

    def __init__(self, separate: bool = False):
        self.items: list[list] = []  # [role, text]
        self.separate = separate

    def say(self, role: str, text: str) -> None:
        if self.items and self.items[-1][0] == role and not self.separate:
            self.items[-1][1] += "\n\n" + text
        else:
            self.items.append([role, text])

    def records(self, head: str) -> list[dict]:
        """`{from, value}` turns with `head` before the first; Skip unless the user speaks first."""
        if not self.items or self.items[0][0] != "human":
            raise Skip("the conversation does not start with a user turn")
        self.items[0][1] = head + self.items[0][1]
        return [{"from": role, "value": text} for role, text in self.items]


_RESULT_HEADER = re.compile(r"^(?:EXECUTION RESULT of \[[\w.-]+\]:|OBSERVATION:)\n")


def observation_text(event: dict, strip: bool) -> str:
    """A text observation's content; with `strip` (the 2025-12 release's rendering), without the
    result header it carries (the styles add their own) and surrounding whitespace."""
    return _RESULT_HEADER.sub("", event["content"], count=1).strip() if strip else event["content"]
