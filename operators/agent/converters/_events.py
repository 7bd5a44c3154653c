"""Builders of ADP event dicts (key order as the ADP reference writes them) and shared helpers."""

from __future__ import annotations

import re
from typing import Callable, NamedTuple

import xxhash


def text_obs(content: str, source: str = "user", name: str | None = None) -> dict:
    return {"class_": "text_observation", "content": content, "name": name, "source": source}


def unnamed_obs(content: str, source: str = "user") -> dict:
    """A text_observation without the optional `name` key, as the 2025-12 release writes most."""
    return {"class_": "text_observation", "content": content, "source": source}


def image_obs(path: str, source: str = "environment", annotations: list | None = None) -> dict:
    return {"class_": "image_observation", "content": path, "annotations": annotations, "source": source}


def message(content: str, description: str | None = None) -> dict:
    return {"class_": "message_action", "content": content, "description": description}


def api(function: str, kwargs: dict, description: str | None = "") -> dict:
    return {"class_": "api_action", "function": function, "kwargs": kwargs, "description": description}


def code(language: str, content: str, description: str | None = "") -> dict:
    return {"class_": "code_action", "language": language, "content": content, "description": description}


def web_obs(axtree: str | None = None, html: str | None = None, url: str | None = None,
            image: dict | None = None, viewport_size: list | None = None) -> dict:
    return {"class_": "web_observation", "html": html, "axtree": axtree, "url": url,
            "image_observation": image, "viewport_size": viewport_size}


def trajectory(traj_id: str, content: list[dict], details: dict | None = None) -> dict:
    return {"id": str(traj_id), "content": content, "details": details or {}}


def pick(traj_id: str, choices: tuple[str, ...], salt: str = "") -> str:
    """A deterministic stand-in for the reference's unseeded random.choice: same id, same pick."""
    return choices[xxhash.xxh32_intdigest((salt + str(traj_id)).encode()) % len(choices)]


class Unconvertible(ValueError):
    """A raw record this converter cannot map to ADP; the message says why (it goes to the trace)."""


# The reference closes some datasets with a success observation and a finish message drawn by an
# unseeded random.choice from these lists; we draw deterministically from the same lists.
CLOSING_OBSERVATIONS = (
    "Task completed successfully.",
    "Well done on successfully completing the task!",
    "Your solution has been verified as correct. ",
    "Your implementation satisfies the task requirements.",
    "Congratulations! You have successfully solved the task.",
)
CLOSING_MESSAGES = (
    "I have successfully completed the task.",
    "I have fulfilled all the requirements of the task.",
    "I've wrapped up the task successfully.",
    "The objective has been achieved with no outstanding issues.",
    "I did it! The task is now complete.",
)


def closing(traj_id: str, message_in_description: bool) -> list[dict]:
    """[success observation, finish message]: the closing message goes either in the finish
    message's description (content `<finish> </finish>`) or inside the finish tags."""
    obs = text_obs(pick(traj_id, CLOSING_OBSERVATIONS, "obs"))
    said = pick(traj_id, CLOSING_MESSAGES, "msg")
    if message_in_description:
        return [obs, message("<finish> </finish>", said)]
    return [obs, message(f"<finish> {said} </finish>", "")]


def turns(record: dict, key: str = "conversations") -> list[dict]:
    """The record's list of {role, content} turns; an Unconvertible error when it is absent."""
    conv = record.get(key)
    if not isinstance(conv, list) or not conv:
        raise Unconvertible(f"no '{key}' list of turns in the record")
    for i, turn in enumerate(conv):
        if not isinstance(turn, dict) or not isinstance(turn.get("content"), str):
            raise Unconvertible(f"{key}[{i}] has no string 'content'")
    return conv


def marked_action(text: str, marker: str, grammar: re.Pattern) -> tuple[str, re.Match] | None:
    """The action of an AgentInstruct turn "Thought: ... <marker> <action>": the last `marker`
    followed by text in the dataset's `grammar`, since models also write the marker inside their
    reasoning and go on reasoning after the action. Returns (the thought before it, the grammar
    match), or None when no marker is followed by an action."""
    for m in reversed(list(re.finditer(re.escape(marker) + r"[ \t]*", text))):
        if action := grammar.match(text, m.end()):
            return re.sub(r"^\s*Thought:", "", text[: m.start()], count=1).strip(), action
    return None


class Turn(NamedTuple):
    """One turn as turn_events hands it to a handler: its index in the conversation, its text, the
    events made so far, and (for an agent turn) whether it is the conversation's last agent turn."""

    index: int
    text: str
    events: list[dict]
    last: bool


def turn_events(conv: list[dict], on_user: Callable[[Turn], dict], on_agent: Callable[[Turn], dict], *,
                user_roles: tuple[str, ...] = ("user",), skip_roles: tuple[str, ...] = ()) -> list[dict]:
    """One event per turn of `conv` (as `turns` returns it): `on_user` makes those of turns in
    `user_roles`, `on_agent` those of every other role but the `skip_roles`, which make none."""
    agents = [i for i, t in enumerate(conv) if t.get("role") not in user_roles and t.get("role") not in skip_roles]
    last_agent = max(agents, default=-1)
    events: list[dict] = []
    for i, turn in enumerate(conv):
        role = turn.get("role")
        if role in skip_roles:
            continue
        handle = on_user if role in user_roles else on_agent
        events.append(handle(Turn(i, turn["content"], events, i == last_agent)))
    return events


def agenttuning(record: dict, fallback_id: str, on_user: Callable[[Turn], dict], on_agent: Callable[[Turn], dict],
                close: bool | None = None) -> dict:
    """An AgentInstruct record's trajectory: the events of its `conversations` turns, then, unless
    `close` is None, the success closing (`close` is its message_in_description)."""
    conv = turns(record)
    traj_id = str(record.get("id") or fallback_id)
    events = turn_events(conv, on_user, on_agent)
    return trajectory(traj_id, events if close is None else events + closing(traj_id, message_in_description=close))
