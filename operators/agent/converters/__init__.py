"""Converters from source datasets (and generic chat formats) to ADP trajectories, by name.

Each converter is a small module with `convert(record, fallback_id) -> trajectory dict`,
where `fallback_id` names the trajectory when the record has no id of its own. A module
that sets `GROUP_BY = "<key>"` converts a run of consecutive records sharing that key
(one record per step, as nnetnav has them) and receives the list of records instead.
A record that cannot be converted raises `Unconvertible` (or any error), with the reason.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from itertools import groupby
from typing import Any, Callable, Iterable, Iterator

from curate.errors import CurateError
from operators.agent.converters._events import Unconvertible

CONVERTERS: dict[str, str] = {
    # AgentInstruct (AgentTuning)
    "agenttuning_alfworld": "agenttuning_alfworld",
    "agenttuning_db": "agenttuning_db",
    "agenttuning_kg": "agenttuning_kg",
    "agenttuning_mind2web": "agenttuning_mind2web",
    "agenttuning_os": "agenttuning_os",
    "agenttuning_webshop": "agenttuning_webshop",
    # GUI and mobile datasets
    "android_in_the_wild": "android_in_the_wild",
    # code and tool-use datasets
    "code_feedback": "code_feedback",
    "codeactinstruct": "codeactinstruct",
    "eto": "eto",
    "llava_plus": "llava_plus",
    "mini-coder": "mini_coder",
    "orca_agentinstruct": "orca_agentinstruct",
    "toucan_1_5m": "toucan_1_5m",
    # web-browsing datasets
    "nnetnav-live": "nnetnav_live",
    "omniact": "omniact",
    "nnetnav-wa": "nnetnav_wa",
    "synatra": "synatra",
    "webarena_successful": "webarena_successful",
    # software-engineering datasets
    "nebius_SWE-agent-trajectories": "nebius_swe_agent",
    "swe-gym_openhands_sampled_trajectories": "swe_gym_openhands",
    "swe-play-trajectories": "swe_play",
    "swe-smith": "swe_smith",
    # generic importers for formats users already have
    "openai_chat": "openai_chat",
    "sharegpt": "sharegpt",
}


@dataclass(frozen=True)
class Converter:
    name: str
    convert: Callable[[Any, str], dict]
    group_by: str | None = None


def names() -> list[str]:
    return sorted(CONVERTERS)


def get(name: str) -> Converter:
    """The converter registered as `name`; an unknown name is an error listing the known ones."""
    module = CONVERTERS.get(name)
    if module is None:
        raise CurateError(f"unknown ADP source {name!r}; known sources: {', '.join(names())}")
    mod = importlib.import_module(f"{__name__}.{module}")
    return Converter(name, mod.convert, getattr(mod, "GROUP_BY", None))


@dataclass
class Converted:
    """The outcome for one input unit: `rows` are the positions of the records it came from."""

    rows: list[int]
    trajectory: dict | None
    error: str | None


def convert_unit(conv: Converter, unit: Any, fallback_id: str) -> tuple[dict | None, str | None]:
    """(trajectory, None), or (None, why) for a unit (a record; a group's records) that does not convert."""
    try:
        traj = conv.convert(unit, fallback_id)
    except Unconvertible as e:
        return None, str(e)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
        # A record of an unexpected shape: report it, never stop the whole stream.
        return None, f"{type(e).__name__}: {e}"
    return traj, None


def iter_convert(conv: Converter, records: Iterable[dict], start: int = 0,
                 fallback_ids: Iterable[str] | None = None) -> Iterator[Converted]:
    """Convert a stream of raw records; records are numbered from `start`.

    `fallback_ids` names the records that carry no id (default: their position).
    """
    numbered = ((start + i, rec, fid) for i, (rec, fid) in
                enumerate(zip(records, fallback_ids if fallback_ids is not None else _positions(start))))
    if conv.group_by is None:
        for pos, rec, fid in numbered:
            if not isinstance(rec, dict):
                error = str(rec) if isinstance(rec, Exception) else f"record is a {type(rec).__name__}, not an object"
                yield Converted([pos], None, error)
                continue
            traj, err = convert_unit(conv, rec, fid)
            yield Converted([pos], traj, err)
        return
    key = conv.group_by
    for _, group in groupby(numbered, key=lambda t: t[1].get(key) if isinstance(t[1], dict) else None):
        group = list(group)
        traj, err = convert_unit(conv, [rec for _, rec, _ in group], group[0][2])
        yield Converted([pos for pos, _, _ in group], traj, err)


def _positions(start: int) -> Iterator[str]:
    i = start
    while True:
        yield str(i)
        i += 1
