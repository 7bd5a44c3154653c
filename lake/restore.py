"""Restoring deleted tables from their containers (or, failing that, from quarantine)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from curate.errors import CurateError

from .quarantine import Quarantine
from .rebuild import read_container, rebuild, schema_from_text, write_rebuilt
from .reader import read_table
from .tables import same_data, table_at


@dataclass
class Restored:
    table: str
    path: str
    rows: int
    source: str  # "container" | "quarantine"


def restore_tables(quarantine: Quarantine, names: list[str] | None) -> list[Restored]:
    """Restores `names` (None: every deleted table) and drops them from the quarantine record."""
    entries = quarantine.entries()
    if names is None:
        names = sorted(entries)
    unknown = [n for n in names if n not in entries]
    if unknown:
        known = ", ".join(sorted(entries)[:10]) or "none"
        raise CurateError(f"not in quarantine {quarantine.root}: {', '.join(unknown)} (deleted tables: {known})")
    done = []
    for name in names:
        done.append(_restore_one(entries[name], quarantine.root))
        del entries[name]
        quarantine.save(entries)
    return done


def _restore_one(entry: dict, root: Path) -> Restored:
    path = Path(entry["path"])
    if path.exists():
        raise CurateError(f"{path}: exists already; refusing to overwrite it with the restored table")
    container = table_at(entry["container_path"])
    copy = root / entry["quarantined"] if entry.get("quarantined") else None
    slot = (root / entry["positions"]).parent
    # By content: a container touched or copied back since the apply still rebuilds the table.
    if not same_data(container, entry["container_fingerprint"], entry.get("container_content")):
        if copy is None or not copy.exists():
            raise CurateError(
                f"{entry['table']}: its container {entry['container_path']} changed or is gone, "
                "and the quarantined copy was purged; it cannot be rebuilt exactly"
            )
        shutil.move(copy, path)
        shutil.rmtree(slot, ignore_errors=True)
        return Restored(entry["table"], str(path), entry["rows"], "quarantine")
    positions = pq.read_table(root / entry["positions"]).column("position").to_numpy()
    schema = schema_from_text(entry["schema"])
    data = rebuild(read_container(container, entry["columns"], schema), positions, schema)
    write_rebuilt(data, path, entry["layout"], entry["partition_keys"])
    restored = table_at(path)
    if restored is None or read_table(restored).num_rows != entry["rows"]:
        raise CurateError(f"{path}: the restored table does not have the {entry['rows']} rows it had")
    # The positions and any quarantined copy are no longer needed.
    shutil.rmtree(slot, ignore_errors=True)
    return Restored(entry["table"], str(path), entry["rows"], "container")
