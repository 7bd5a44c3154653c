"""Parsing of the `<function=NAME><parameter=KEY>VALUE</parameter>...</function>` call format
(SWE-agent / OpenHands function-calling text) into ADP actions."""

from __future__ import annotations

import json
import re

from curate_operators.agent.converters._events import api, code

_FUNCTION = re.compile(r"<function=(?P<name>[\w.-]+)>(?P<body>.*?)(?:</function>|$)", re.DOTALL)
_CLOSED_FUNCTION = re.compile(r"<function=(?P<name>[\w.-]+)>(?P<body>.*?)</function>", re.DOTALL)
# Options of a shell tool that do not change the command (OpenHands' execute_bash).
_SHELL_OPTIONS = {"is_input", "timeout"}
_PARAMETER = re.compile(r"<parameter=(?P<key>[\w.-]+)>(?P<value>.*?)</parameter>", re.DOTALL)
# Parameters whose values are JSON (lists / numbers), not text.
_JSON_PARAMS = {"view_range", "insert_line"}


def _value(key: str, value: str, typed: bool):
    # The reference strips every parameter value (leading indentation of code included).
    value = value.strip()
    if typed and key in _JSON_PARAMS:
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def split_call(text: str, closed: bool = False, typed: bool = True) -> tuple[str, str, dict] | None:
    """(thought before the call, function name, kwargs) of the first call in `text`, or None.
    With `closed`, a call must end with `</function>` (an unterminated one is text); without
    `typed`, JSON parameters (view_range, insert_line) keep their text."""
    m = (_CLOSED_FUNCTION if closed else _FUNCTION).search(text)
    if m is None:
        return None
    kwargs = {p["key"]: _value(p["key"], p["value"], typed) for p in _PARAMETER.finditer(m["body"])}
    return text[: m.start()].strip(), m["name"], kwargs


def call_event(thought: str, name: str, kwargs: dict, bash_tools: tuple[str, ...] = ("bash",)) -> dict:
    """A bash tool call becomes a bash code_action (its options dropped); any other tool an api_action."""
    description = thought or None
    if name in bash_tools and "command" in kwargs and set(kwargs) <= {"command"} | _SHELL_OPTIONS:
        return code("bash", kwargs.get("command", ""), description)
    return api(name, kwargs, description)
