"""Streaming file IO for the `curate adp` commands: JSON, JSONL or Parquet in; JSONL or Parquet out.

JSONL and Parquet are read in chunks and written as they come, so memory stays flat however
large the input. A JSON file (one array, as the ADP releases ship samples) is parsed whole:
use JSONL or Parquet for large data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from curate.errors import InputError

PARQUET_BATCH = 2048


def input_format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".json":
        return "json"
    if suffix in (".parquet", ".pq"):
        return "parquet"
    raise InputError(f"{path}: unknown input format {suffix!r} (expected .json, .jsonl or .parquet)")


def read_records(path: str | Path) -> Iterator[dict | InputError]:
    """The records of `path` one by one. A malformed JSONL line comes as an InputError naming file
    and line (in its place, so the stream goes on); an unreadable file raises one."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    fmt = input_format(path)
    if fmt == "parquet":
        try:
            pf = pq.ParquetFile(path)
        except (pa.ArrowInvalid, OSError) as e:
            raise InputError(f"{path}: not a readable Parquet file ({e})") from None
        for batch in pf.iter_batches(batch_size=PARQUET_BATCH):
            yield from batch.to_pylist()
        return
    if fmt == "json":
        try:
            data = orjson.loads(path.read_bytes())
        except orjson.JSONDecodeError as e:
            raise InputError(f"{path}: not valid JSON ({e})") from None
        if isinstance(data, dict):
            data = [data]
        if not isinstance(data, list):
            raise InputError(f"{path}: expected a JSON array of records")
        yield from data
        return
    with path.open("rb") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield orjson.loads(line)
            except orjson.JSONDecodeError as e:
                yield InputError(f"{path}, line {line_no}: not valid JSON ({e})")


class RecordWriter:
    """Writes dict records to JSONL (one object per line) or Parquet (row groups as they fill).

    For Parquet, `to_row(record)` maps a record to the Arrow layout of `schema` (JSON-string
    columns for nested trajectory content); for JSONL records are written as they are.
    """

    def __init__(self, path: str | Path, schema: pa.Schema | None = None, to_row=None, rows_per_group: int = 4096):
        self.path = Path(path)
        self.fmt = "parquet" if self.path.suffix.lower() in (".parquet", ".pq") else "jsonl"
        if self.fmt == "jsonl" and self.path.suffix.lower() not in (".jsonl", ".ndjson"):
            raise InputError(f"{self.path}: unknown output format (expected .jsonl or .parquet)")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = self.path.with_name(self.path.name + ".tmp")
        self.schema, self.to_row, self.rows_per_group = schema, to_row, rows_per_group
        self._rows: list[dict] = []
        self._pq = None
        self._fh = None if self.fmt == "parquet" else self._tmp.open("wb")
        self.count = 0

    def write(self, record: dict) -> None:
        self.count += 1
        if self._fh is not None:
            self._fh.write(orjson.dumps(record) + b"\n")
            return
        self._rows.append(self.to_row(record) if self.to_row else record)
        if len(self._rows) >= self.rows_per_group:
            self._flush()

    def _flush(self) -> None:
        if not self._rows:
            return
        table = pa.Table.from_pylist(self._rows, schema=self.schema)
        if self._pq is None:
            self._pq = pq.ParquetWriter(self._tmp, table.schema, compression="zstd")
        self._pq.write_table(table)
        self._rows = []

    def close(self) -> None:
        """Finish the file and move it into place (a crash never leaves a complete-looking file)."""
        if self._fh is not None:
            self._fh.close()
        else:
            self._flush()
            if self._pq is None:
                self._pq = pq.ParquetWriter(self._tmp, self.schema, compression="zstd")
            self._pq.close()
        self._tmp.replace(self.path)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *_):
        if exc_type is None:
            self.close()
        else:
            for h in (self._fh, self._pq):
                if h is not None:
                    h.close()
            self._tmp.unlink(missing_ok=True)
