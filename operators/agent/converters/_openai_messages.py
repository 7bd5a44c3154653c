"""OpenAI chat messages (with `tool_calls` and `tool` role results) -> ADP events."""

from __future__ import annotations

import json

from curate_operators.agent.converters._events import Unconvertible, api, code, message, text_obs

BASH_TOOLS = ("execute_bash", "bash")
PYTHON_TOOLS = ("execute_ipython_cell",)


def _arguments(call: dict) -> tuple[str, dict]:
    fn = call.get("function") or {}
    name = fn.get("name")
    if not isinstance(name, str):
        raise Unconvertible("tool call without a function name")
    args = fn.get("arguments")
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError as e:
            raise Unconvertible(f"tool call {name}: arguments are not JSON ({e})") from None
    if not isinstance(args, dict):
        raise Unconvertible(f"tool call {name}: arguments are not an object")
    return name, args


def tool_call_event(name: str, args: dict, description: str | None) -> dict:
    if name in BASH_TOOLS and "command" in args and set(args) <= {"command", "is_input", "timeout"}:
        return code("bash", args["command"], description)
    if name in PYTHON_TOOLS and "code" in args:
        return code("python", args["code"], description)
    if name == "finish":
        said = args.get("message") or "Task completed."
        return message(f"<finish> {said} </finish>", description)
    return api(name, args, description)


def messages_to_events(messages, drop_system: bool = False, strip_prefix: str = "",
                       tool_names: bool = False) -> list[dict]:
    """Events in order; several tool calls in one message are interleaved with their results
    (call, its result, next call, ...), and each takes the message text as its thought."""
    if not isinstance(messages, list) or not messages:
        raise Unconvertible("no 'messages' list")
    events: list[dict] = []
    pending: list[dict] = []  # calls of the last assistant message still waiting for their turn
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise Unconvertible(f"messages[{i}] is not an object")
        role, content = m.get("role"), m.get("content")
        if isinstance(content, list):  # content parts: keep the text ones
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        if role != "tool":
            events += pending
            pending = []
        if role == "system":
            if not drop_system and content:
                events.append(text_obs(content))
        elif role == "user":
            events.append(text_obs(content or ""))
        elif role == "tool":
            text = content or ""
            if strip_prefix and text.startswith(strip_prefix):
                text = text[len(strip_prefix):]
            events.append(text_obs(text, source="environment", name=m.get("name") if tool_names else None))
            if pending:
                events.append(pending.pop(0))
        elif role == "assistant":
            calls = [tool_call_event(*_arguments(c), content) for c in (m.get("tool_calls") or [])]
            if not calls:
                events.append(message(content or ""))
            else:
                events.append(calls[0])
                pending = calls[1:]
        else:
            raise Unconvertible(f"messages[{i}] has unknown role {role!r}")
    return events + pending
