"""Generic importer: ShareGPT conversations -> ADP.

Record: `{"id"?: ..., "conversations": [{"from": system|human|user|gpt|assistant|function_call|
observation|tool, "value": str}]}`. A `function_call` value is JSON `{"name", "arguments"}` and
becomes an api_action (a bash/python tool a code_action); observations are environment output.
"""

from __future__ import annotations

import json

from curate_operators.agent.converters._events import Unconvertible, message, text_obs, trajectory
from curate_operators.agent.converters._openai_messages import tool_call_event
from curate_operators.agent.converters.openai_chat import mark_finish
from curate_operators.agent.converters._model_text import Turns

_USER, _AGENT, _ENV = ("human", "user", "system"), ("gpt", "assistant", "chatgpt", "bing"), ("observation", "tool")
MODEL_TEXT = Turns("conversations", text="value", role="from", model=_AGENT)


def _call(value: str, i: int) -> dict:
    try:
        call = json.loads(value)
    except ValueError:
        raise Unconvertible(f"conversations[{i}]: function_call value is not JSON") from None
    args = call.get("arguments", {}) if isinstance(call, dict) else None
    if isinstance(args, str):
        args = json.loads(args) if args.strip() else {}
    if not isinstance(call, dict) or not isinstance(call.get("name"), str) or not isinstance(args, dict):
        raise Unconvertible(f"conversations[{i}]: function_call needs a name and object arguments")
    return tool_call_event(call["name"], args, "")


def turns(record: dict):
    """(index, turn) of a ShareGPT record's `conversations`, each a dict with a string `value`
    (the ShareGPT-shaped converters, eto and llava_plus too, walk them so)."""
    conv = record.get("conversations")
    if not isinstance(conv, list) or not conv:
        raise Unconvertible("no 'conversations' list")
    for i, turn in enumerate(conv):
        if not isinstance(turn, dict) or not isinstance(turn.get("value"), str):
            raise Unconvertible(f"conversations[{i}] has no string 'value'")
        yield i, turn


def convert(record: dict, fallback_id: str) -> dict:
    events = []
    for i, turn in turns(record):
        who, value = turn.get("from"), turn["value"]
        if who in _USER:
            events.append(text_obs(value))
        elif who in _AGENT:
            events.append(message(value))
        elif who in _ENV:
            events.append(text_obs(value, source="environment"))
        elif who == "function_call":
            events.append(_call(value, i))
        else:
            raise Unconvertible(f"conversations[{i}] has unknown speaker {who!r}")
    traj_id = str(record.get("id") if record.get("id") is not None else fallback_id)
    return trajectory(traj_id, mark_finish(events))
