"""What an input format's reader yields: chunks of (RecordBatch, BadRows), the bad rows being those it
could not parse, and a batch fitted to the input's schema, with the rows that do not fit taken out as
bad rows (curate/io/readers.py runs the readers)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import orjson
import pyarrow as pa

from curate.io import input_schema


@dataclass
class BadRows:
    """Rows a reader could not parse: where they were, their raw text and why. `unit` is what
    `line` counts, the word the trace and errors put before it: "line" (JSON lines, CSV), "row"
    (Parquet, Arrow), "member" (a tar's members: WebDataset), "offset" (bytes: WARC)."""

    line: list[int] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)
    error: list[str] = field(default_factory=list)
    reason: list[str] = field(default_factory=list)  # the trace's reason: unparseable, or truncated
    unit: str = "line"

    def add(self, line: int, raw: bytes | str, error: str, reason: str = "unparseable") -> None:
        self.line.append(line)
        self.raw.append(raw if isinstance(raw, str) else raw.decode("utf-8", "replace"))
        self.error.append(error)
        self.reason.append(reason)

    def __len__(self) -> int:
        return len(self.line)


Chunk = tuple[pa.RecordBatch | None, BadRows | None]


def fit_to_schema(
    batch: pa.RecordBatch, schema: pa.Schema, first_row: int, bad: BadRows | None
) -> tuple[pa.RecordBatch, BadRows | None]:
    """`batch` (whose first row is the file's row `first_row`, 0-based) conformed to `schema`;
    rows with a value that cannot take its type are taken out into `bad` (as JSON text)."""
    fitted, misfits = input_schema.conform(batch, schema)
    if not misfits:
        return fitted, bad
    bad = bad if bad is not None else BadRows(unit="row")
    keep = np.ones(batch.num_rows, dtype=bool)
    for i, why in sorted(misfits.items()):
        keep[i] = False
        where = "" if bad.unit == "row" else f"row {first_row + i + 1}: "  # a row already says so
        bad.add(first_row + i + 1, orjson.dumps(batch.slice(i, 1).to_pylist()[0], default=str), where + why)
    return fitted.filter(pa.array(keep)), bad
