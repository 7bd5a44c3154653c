"""mini-coder (mini-SWE-agent trajectories: one bash block per turn) -> ADP.

The system prompt is dropped; an assistant turn "THOUGHT: ...```bash\\n<command>\\n```" is a bash
code_action with the thought as its description, a `<function=submit>` turn an api_action (its
description the text before the call, as the reference keeps it); `<returncode>...<output>` user
turns are environment output. A success closing follows, as for swe-smith.
"""

from __future__ import annotations

import re

from curate_operators.agent.converters._events import (
    Turn,
    closing,
    code,
    message,
    text_obs,
    trajectory,
    turn_events,
    turns,
)
from curate_operators.agent.converters._function_calls import call_event, split_call
from curate_operators.agent.converters._model_text import Turns

MODEL_TEXT = Turns("messages")

_BASH = re.compile(r"```(?:bash|sh)\n(?P<code>.*?)\n```", re.DOTALL)
_THOUGHT = re.compile(r"^\s*THOUGHT:\s*")
_OUTPUT = re.compile(r"^<returncode>.*?</returncode>\s*<output>\n(?P<out>.*?)\n?</output>\s*$", re.DOTALL)


def _assistant(text: str) -> dict:
    if m := _BASH.search(text):
        return code("bash", m["code"], _THOUGHT.sub("", text[: m.start()]).strip())
    call = split_call(text)
    return call_event(*call) if call else message(text)


def _user(turn: Turn) -> dict:
    out = _OUTPUT.match(turn.text)
    return text_obs(out["out"], source="environment") if out else text_obs(turn.text)


def convert(record: dict, fallback_id: str) -> dict:
    conv = turns(record, "messages")
    traj_id = str(record.get("id") or record.get("instance_id") or fallback_id)
    events = turn_events(conv, _user, lambda turn: _assistant(turn.text), skip_roles=("system",))
    return trajectory(traj_id, events + closing(traj_id, message_in_description=False))
