"""Shared rules for chat datasets whose assistant turns hold fenced code blocks."""

from __future__ import annotations

import re

from curate_operators.agent.converters._events import closing, code, message

_FENCE = re.compile(r"```(?P<lang>[\w+#-]*)\n(?P<code>.*?)\n```", re.DOTALL)
_LANG_ALIASES = {"": "python", "py": "python", "c++": "cpp", "js": "javascript", "sh": "bash", "shell": "bash"}


def assistant_event(text: str) -> dict:
    """The first fenced block as a code_action (prose before it = description), else a message."""
    m = _FENCE.search(text)
    if m is None:
        return message(text)
    lang = m["lang"].lower()
    return code(_LANG_ALIASES.get(lang, lang), m["code"], text[: m.start()])


def finish_or_close(traj_id: str, events: list[dict]) -> list[dict]:
    """A trailing prose message becomes the finish message; otherwise a closing pair is added."""
    if events and events[-1]["class_"] == "message_action":
        events[-1] = message(f"<finish> {events[-1]['content']} </finish>", events[-1]["description"])
        return events
    return events + closing(traj_id, message_in_description=False)
