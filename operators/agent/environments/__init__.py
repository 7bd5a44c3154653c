"""Per-dataset rendering environments for the SFT exporters (package data, one JSON file each).

An environment says whether the dataset is web browsing (`web`), which tool runs its API
calls (`tool`: execute_ipython_cell, execute_bash or browser), whether that tool has other
functions besides the API (`also`), and the API documentation shown to the model (`docs`);
`separate_turns`, `call_role` and `strip_observations` follow renderings that keep every event its own turn and give
OpenHands function calls a role of their own. Users may point to their own JSON file with the same keys.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import xxhash
from pydantic import BaseModel, ConfigDict, ValidationError

from curate.errors import CurateError

_HERE = Path(__file__).parent


class Environment(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    web: bool = False
    tool: str | None = None
    also: bool = False
    docs: str = ""
    # The SWE-agent rendering documents more functions for some datasets (None: same as `docs`).
    sweagent_docs: str | None = None
    # Every event its own turn (the reference merges consecutive same-side events, except for toucan).
    separate_turns: bool = False
    # The OpenHands role of a turn holding a function call ("function_call" in toucan's rendering).
    call_role: str = "gpt"
    # Observations shown stripped and without a result header of their own (swe-play's rendering).
    strip_observations: bool = False


def names() -> list[str]:
    return sorted(p.stem for p in _HERE.glob("*.json"))


@lru_cache(maxsize=64)
def load(name_or_path: str | None) -> Environment:
    """The environment shipped as `name`, or read from a JSON file path.

    None, or the name of a source dataset that has no API (e.g. agenttuning_os), gives the
    plain environment: no API documentation, not web.
    """
    from curate_operators.agent.converters import CONVERTERS

    if not name_or_path or (name_or_path in CONVERTERS and not (_HERE / f"{name_or_path}.json").is_file()):
        return Environment()
    path = Path(name_or_path)
    if not path.is_file():
        path = _HERE / f"{name_or_path}.json"
    if not path.is_file():
        raise CurateError(f"unknown API environment {name_or_path!r}: not a file, and not one of {', '.join(names())}")
    try:
        return Environment.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, ValidationError) as e:
        raise CurateError(f"{path}: not a valid environment file ({e})") from None


# Ways the reference introduces the API documentation; it draws one at random per trajectory,
# we draw deterministically from the trajectory id.
INTROS = (
    "The environment {tool} provides the following pre-defined functions: ",
    "Available functions in {tool}: ",
    "Note that {tool} supports the following pre-defined functions: ",
    "The following functions are defined and ready for use in {tool}: ",
    "Below is a list of functions you can use in the {tool} environment. ",
    "The toolkit for {tool} contains the following functions. ",
    "In {tool}, you can use the following pre-defined functions: ",
    "The following pre-defined functions are available in {tool}. ",
)
# The same, for a tool that has functions of its own besides the API.
ALSO_INTROS = (
    "The environment {tool} also provides the following pre-defined functions: ",
    "Available functions in {tool}: ",
    "Note that {tool} also supports the following pre-defined functions: ",
    "The following functions are also defined and ready for use in {tool}: ",
    "Below is a list of functions you can also use in the {tool} environment. ",
    "The toolkit for {tool} also contains the following functions. ",
    "In {tool}, you can also use the following pre-defined functions: ",
    "The following pre-defined functions are also available in {tool}. ",
)


def api_intro(env: Environment, tool: str, traj_id: str, also: bool, docs: str | None = None) -> str:
    """The documentation block put before the first user message ('' when there is no API)."""
    docs = env.docs if docs is None else docs
    if not docs:
        return ""
    intros = ALSO_INTROS if also else INTROS
    intro = intros[xxhash.xxh32_intdigest(str(traj_id).encode()) % len(intros)].format(tool=tool)
    return f"{intro}\n\n{docs}\n\n"
