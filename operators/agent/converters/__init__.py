"""Converters from source datasets (and generic chat formats) to ADP trajectories, by name.

Each converter is a small module with `convert(record, fallback_id) -> trajectory dict` (or a
list of them, for a record that holds several: screenagent's sessions give one per step), where
`fallback_id` names the trajectory when the record has no id of its own. Records are JSON
objects, or arrays where the module sets `RECORD = list` (a session stored as its list of steps).
`NEEDS` says what a source needs besides its records (images on disk for the GUI sets). A module
that sets `GROUP_BY = "<key>"` converts a run of consecutive records sharing that key
(one record per step, as nnetnav has them) and receives the list of records instead.
A record that cannot be converted raises `Unconvertible` (or any error), with the reason.
A module whose records hold model output names where (`MODEL_TEXT`, see _model_text.py): the
converter then sees that text without any chat template's special tokens around it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from itertools import groupby
from typing import Any, Callable, Iterable, Iterator

from curate.errors import CurateError
from curate_operators.agent.converters._events import Unconvertible
from curate_operators.agent.converters._model_text import unwrapped

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
    "androidcontrol": "androidcontrol",
    "screenagent": "screenagent",
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
    "turkingbench": "turkingbench",
    "webarena_successful": "webarena_successful",
    # software-engineering datasets
    "nebius_SWE-agent-trajectories": "nebius_swe_agent",
    "swe-gym_openhands_sampled_trajectories": "swe_gym_openhands",
    "swe-play-trajectories": "swe_play",
    "swe-smith": "swe_smith",
    # generic importers for formats users already have, and ADP itself (to validate and export)
    "adp": "adp",
    "openai_chat": "openai_chat",
    "sharegpt": "sharegpt",
}


@dataclass(frozen=True)
class Converter:
    name: str
    convert: Callable[[Any, str], dict]
    group_by: str | None = None
    record_type: type = dict
    model_text: Any = None  # where the records hold model output (_model_text.Field / Turns), if they do
    needs: str = ""  # besides the records

    def requirements(self) -> str:
        """What the source needs, in words, for `curate adp sources`."""
        parts = [self.needs] if self.needs else []
        if self.group_by:
            parts.append(f"one record per step, a trajectory's steps consecutive with the same `{self.group_by}` "
                         "(in a recipe, adp_join before adp_convert)")
        if self.record_type is list:
            parts.append("each record a JSON array (a session's steps), one trajectory per step")
        return "; ".join(parts) or "the records alone"


def names() -> list[str]:
    return sorted(CONVERTERS)


def get(name: str) -> Converter:
    """The converter registered as `name`; an unknown name is an error listing the known ones."""
    module = CONVERTERS.get(name)
    if module is None:
        raise CurateError(f"unknown ADP source {name!r}; known sources: {', '.join(names())}")
    mod = importlib.import_module(f"{__name__}.{module}")
    group_by, where = getattr(mod, "GROUP_BY", None), getattr(mod, "MODEL_TEXT", None)
    convert = mod.convert if where is None else _unwrapping(mod.convert, where, grouped=group_by is not None)
    return Converter(name, convert, group_by, getattr(mod, "RECORD", dict), where, getattr(mod, "NEEDS", ""))


def _unwrapping(convert: Callable[[Any, str], dict], where, grouped: bool) -> Callable[[Any, str], dict]:
    """`convert`, handed its unit (a record, or a group's records) with the model texts unwrapped."""
    def call(unit, fallback_id: str) -> dict:
        return convert([unwrapped(r, where) for r in unit] if grouped else unwrapped(unit, where), fallback_id)

    return call


@dataclass
class Converted:
    """The outcome for one input unit: `rows` are the positions of the records it came from."""

    rows: list[int]
    trajectories: list[dict]  # none when the unit did not convert (`error` says why)
    error: str | None

    @property
    def trajectory(self) -> dict | None:
        """The unit's trajectory, for sources that give one per unit (None when it did not convert)."""
        if len(self.trajectories) > 1:
            raise ValueError(f"records {self.rows} gave {len(self.trajectories)} trajectories: use .trajectories")
        return self.trajectories[0] if self.trajectories else None


def convert_unit(conv: Converter, unit: Any, fallback_id: str) -> tuple[list[dict], str | None]:
    """([trajectory, ...], None), or ([], why) for a unit (a record; a group's records) that does not convert."""
    try:
        traj = conv.convert(unit, fallback_id)
    except Unconvertible as e:
        return [], str(e)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
        # A record of an unexpected shape: report it, never stop the whole stream.
        return [], f"{type(e).__name__}: {e}"
    return traj if isinstance(traj, list) else [traj], None


def iter_convert(conv: Converter, records: Iterable[dict], start: int = 0,
                 fallback_ids: Iterable[str] | None = None) -> Iterator[Converted]:
    """Convert a stream of raw records; records are numbered from `start`.

    `fallback_ids` names the records that carry no id (default: their position).
    """
    numbered = ((start + i, rec, fid) for i, (rec, fid) in
                enumerate(zip(records, fallback_ids if fallback_ids is not None else _positions(start))))
    if conv.group_by is None:
        for pos, rec, fid in numbered:
            if not isinstance(rec, conv.record_type):
                want = "an array" if conv.record_type is list else "an object"
                error = str(rec) if isinstance(rec, Exception) else f"record is a {type(rec).__name__}, not {want}"
                yield Converted([pos], [], error)
                continue
            yield Converted([pos], *convert_unit(conv, rec, fid))
        return
    key = conv.group_by
    for _, group in groupby(numbered, key=lambda t: t[1].get(key) if isinstance(t[1], dict) else None):
        group = list(group)
        yield Converted([pos for pos, _, _ in group], *convert_unit(conv, [rec for _, rec, _ in group], group[0][2]))


def _positions(start: int) -> Iterator[str]:
    i = start
    while True:
        yield str(i)
        i += 1
