"""Applying a deletion plan: check, rebuild-test, record, then move to quarantine.

Nothing is touched unless `yes`. If any table of the plan (deleted or container) changed
since the scan (holds other data: a new mtime alone is no change, see tables.same_data),
the whole apply is refused: the plan's evidence no longer holds. Each table is rebuilt in
memory from its container and compared with the original (rows, order, schema with
metadata) before it is moved; the record that restore needs is written before the move,
so a crash never loses a table.
"""

from __future__ import annotations

import datetime as dt
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from curate.errors import CurateError

from .quarantine import Quarantine
from .rebuild import file_layout, read_container, rebuild, row_positions, schema_to_text, table_schema
from .reader import TableReadError, read_table
from .tables import Table, same_data, table_at


@dataclass
class ApplyReport:
    dry_run: bool
    moved: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (table, why)
    bytes_moved: int = 0
    purged: bool = False


def changed_since_scan(plan: dict) -> list[str]:
    """Tables of the plan that are gone or hold other data than at the scan."""
    problems = []
    seen: set[str] = set()
    for d in plan["deletions"]:
        for path, fp, content, role in ((d["path"], d["fingerprint"], d.get("content"), "table"),
                                        (d["container_path"], d["container_fingerprint"], d.get("container_content"),
                                         "container")):
            if path in seen:
                continue
            seen.add(path)
            now = table_at(path)
            if now is None:
                problems.append(f"{path} ({role}) is gone")
            elif not same_data(now, fp, content):
                problems.append(f"{path} ({role}) changed")
    return problems


def _current(path: str) -> Table:
    t = table_at(path)
    if t is None:
        raise CurateError(f"{path}: gone")
    return t


def apply_plan(plan: dict, quarantine: Quarantine, *, yes: bool = False, purge: bool = False) -> ApplyReport:
    problems = changed_since_scan(plan)
    if problems:
        shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
        raise CurateError(f"refusing to apply: tables changed since the scan ({shown}); rescan and plan again")
    report = ApplyReport(dry_run=not yes)
    if not yes:
        report.moved = [d["table"] for d in plan["deletions"]]
        report.bytes_moved = sum(d["bytes"] for d in plan["deletions"])
        return report
    entries = quarantine.entries()
    for d in plan["deletions"]:
        try:
            entry = _quarantine_one(d, quarantine, entries, purge)
        except (CurateError, TableReadError, pa.ArrowException, duckdb.Error, OSError) as e:
            report.skipped.append((d["table"], str(e)))
            continue
        report.moved.append(d["table"])
        report.bytes_moved += entry["bytes"]
    report.purged = purge
    return report


def _quarantine_one(d: dict, quarantine: Quarantine, entries: dict, purge: bool) -> dict:
    b, a = _current(d["path"]), _current(d["container_path"])
    mapping = d["columns"]
    schema, partition_keys = table_schema(b)
    container = read_container(a, mapping, schema)
    original = read_table(b)
    try:
        positions = row_positions(container, original.select(list(mapping)))
    except CurateError as e:
        raise CurateError(f"{b.path}: not rebuildable from {a.path} ({e})") from e
    rebuilt = rebuild(container, positions, schema)
    if not rebuilt.equals(original, check_metadata=True):
        raise CurateError(f"{b.path}: a rebuild from {a.path} would not equal the original; not deleted")
    slot = quarantine.slot(b.path)
    slot.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"position": positions}), slot / "positions.parquet")
    moved_to = slot / "data" / Path(b.path).name
    entry = {
        "table": d["table"],
        "path": b.path,
        "format": b.format,
        "partitioned": b.partitioned,
        "fingerprint": b.fingerprint,
        "rows": original.num_rows,
        "bytes": b.bytes,
        "schema": schema_to_text(schema),
        "partition_keys": partition_keys,
        "layout": file_layout(b),
        "container": d["container"],
        "container_path": a.path,
        "container_fingerprint": a.fingerprint,
        # the scan's: changed_since_scan found the container's data the same as then
        "container_content": d.get("container_content"),
        "columns": mapping,
        # relative to the quarantine, so the quarantine can be moved as a whole
        "positions": (slot / "positions.parquet").relative_to(quarantine.root).as_posix(),
        "quarantined": moved_to.relative_to(quarantine.root).as_posix(),
        "applied": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    }
    entries[d["table"]] = entry
    quarantine.save(entries)  # the record exists before the table leaves the lake
    moved_to.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(b.path, moved_to)
    if purge:
        shutil.rmtree(moved_to) if moved_to.is_dir() else moved_to.unlink()
        entry["quarantined"] = None
        quarantine.save(entries)
    return entry
