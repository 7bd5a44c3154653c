"""Streaming conversion, validation and export of files: the work behind `curate adp`.

Records are read one by one, converted or rendered, and written as they come; records that
fail go to a side file `<output>.rejected.jsonl` as `{row, id, reason, detail}`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from operators.agent import converters
from operators.agent.exporters import Exporter, Skip
from operators.agent.files import RecordWriter, read_records
from operators.agent.rows import TRAJECTORY_SCHEMA, sft_schema, trajectory_doc, trajectory_row
from operators.agent.schema import TrajectoryError, validate_trajectory


@dataclass
class Counts:
    read: int = 0
    written: int = 0
    rejected: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    first: str | None = None  # the first rejection, "record N: detail", for error messages

    def reject(self, reason: str, row: int | list[int], detail: str) -> None:
        self.rejected += 1
        self.reasons[reason] = self.reasons.get(reason, 0) + 1
        if self.first is None:
            where = f"record {row}" if isinstance(row, int) else f"records {row[0]}-{row[-1]}"
            self.first = f"{where}: {detail}"

    def reasons_text(self) -> str:
        return ", ".join(f"{r}: {n:,}" for r, n in sorted(self.reasons.items()))


def rejected_path(output: Path) -> Path:
    return output.with_name(output.name + ".rejected.jsonl")


class _Rejects:
    """The side file of rejected records, created only when something is rejected."""

    def __init__(self, path: Path | None, counts: Counts):
        self.path, self.counts, self.writer = path, counts, None

    def add(self, row: int | list[int], traj_id, reason: str, detail: str) -> None:
        self.counts.reject(reason, row, detail)
        if self.path is None:
            return
        if self.writer is None:
            self.writer = RecordWriter(self.path)
        self.writer.write({"row": row, "id": traj_id, "reason": reason, "detail": detail})

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        elif self.path is not None:
            self.path.unlink(missing_ok=True)  # no stale side file from an earlier run


def _counted(records: Iterable[dict], counts: Counts) -> Iterator[dict]:
    for rec in records:
        counts.read += 1
        yield rec


def _not_a_record(row) -> str:
    return str(row) if isinstance(row, Exception) else f"record is a {type(row).__name__}, not a JSON object"


def check(traj: dict) -> str | None:
    try:
        validate_trajectory(traj)
    except TrajectoryError as e:
        return str(e)
    return None


def convert_records(source: str, records: Iterable[dict], out: RecordWriter, rejects: _Rejects, counts: Counts):
    conv = converters.get(source)
    for unit in converters.iter_convert(conv, _counted(records, counts)):
        row = unit.rows[0] if len(unit.rows) == 1 else unit.rows
        if unit.trajectory is None:
            unreadable = len(unit.rows) == 1 and "not valid JSON" in (unit.error or "")
            rejects.add(row, None, "unparseable" if unreadable else "unconvertible", unit.error)
        elif (error := check(unit.trajectory)) is not None:
            rejects.add(row, unit.trajectory.get("id"), "invalid_adp", error)
        else:
            out.write(unit.trajectory)
            counts.written += 1


def convert_file(source: str, input: Path, output: Path) -> Counts:
    converters.get(source)  # an unknown name fails before any file is touched
    counts = Counts()
    rejects = _Rejects(rejected_path(output), counts)
    with RecordWriter(output, TRAJECTORY_SCHEMA, trajectory_row) as out:
        convert_records(source, read_records(input), out, rejects, counts)
    rejects.close()
    return counts


def validate_file(input: Path, rejected: Path | None = None) -> tuple[Counts, list[str]]:
    """Counts, and the first 20 error messages."""
    counts, first = Counts(), []
    rejects = _Rejects(rejected, counts)
    for i, row in enumerate(read_records(input)):
        counts.read += 1
        try:
            error = check(trajectory_doc(row)) if isinstance(row, dict) else _not_a_record(row)
        except ValueError as e:
            error = f"trajectory {row.get('id')!r}: {e}"
        if error is None:
            counts.written += 1
            continue
        rejects.add(i, row.get("id") if isinstance(row, dict) else None, "invalid_adp", error)
        if len(first) < 20:
            first.append(f"record {i}: {error}")
    rejects.close()
    return counts, first


def export_records(exporter: Exporter, records: Iterable[dict], out: RecordWriter, rejects: _Rejects,
                   counts: Counts) -> None:
    for i, row in enumerate(_counted(records, counts)):
        try:
            traj = trajectory_doc(row) if isinstance(row, dict) else None
            error = check(traj) if traj is not None else _not_a_record(row)
        except ValueError as e:
            traj, error = None, str(e)
        if error is not None:
            rejects.add(i, row.get("id") if isinstance(row, dict) else None, "invalid_adp", error)
            continue
        try:
            for rec in exporter.export(traj):
                out.write(rec)
                counts.written += 1
        except Skip as e:
            rejects.add(i, traj["id"], "not_exportable", str(e))


def export_file(style: str, input: Path, output: Path, system_prompt: str | None = None,
                environment: str | None = None, web: bool | None = None) -> Counts:
    exporter = Exporter(style, system_prompt=system_prompt, environment=environment, web=web)
    counts = Counts()
    rejects = _Rejects(rejected_path(output), counts)
    with RecordWriter(output, sft_schema(style)) as out:
        export_records(exporter, read_records(input), out, rejects, counts)
    rejects.close()
    return counts
