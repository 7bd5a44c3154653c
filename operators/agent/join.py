"""adp_join: the records of one trajectory of a per-step source (nnetnav: consecutive records with
the same `id`, one per step) onto the row of its first step, across the whole input, for adp_convert.

Why a Global step: a trajectory's records may lie in different batches, tasks or files, and a
Map must account for each batch's rows within that batch (curate/ops.py), so a join inside
adp_convert depended on where the batches were cut (input.batch_rows, a step's batch_rows). The
fit reads every record in input order (each row's group key and record, prepared by the stage
before), groups consecutive records with the same key as `curate adp convert` does on a stream,
and writes each group's records to a Parquet file in its work directory: memory holds one group
and the groups' first positions. `apply` keeps each group's first row with the group's records
(column JOINED, a JSON array) and sends the other rows to the trace as `merged`.

A source with one record per trajectory needs no join: the step then keeps every row as it is
(and reads nothing in its fit), so one recipe (recipes/agent-sft.yaml) serves every source.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from curate.ops import SERIAL, FitState, Global, Parallel, Result, Value, Verdict
from curate_operators.agent import converters
from curate_operators.agent.ops import AdpConvertParams
from curate_operators.agent.rows import JOINED, raw_records

GROUP_SCHEMA = pa.schema([("first_id", pa.string()), ("records", pa.string())])
ROW_GROUP_BYTES = 8 << 20  # records per row group of the groups file, in bytes: about what one `apply` reads


@dataclass(frozen=True)
class Groups(FitState):
    """The fitted join: `path` holds each group's first row `_id` and records, in input order."""

    path: str
    firsts: np.ndarray  # _ord of each group's first row, ascending
    row_groups: np.ndarray  # index of the first group in each row group of `path`

    def files(self) -> list[str]:
        return [self.path]


class AdpJoin(Global):
    """Per-step records of one trajectory onto the row of its first step (`_adp_records`); the other rows: merged."""

    name = "adp_join"
    Params = AdpConvertParams
    fit_columns = ()  # the fit reads what `prepare` made (and _id)

    def __init__(self, params=None, **kw):
        super().__init__(params, **kw)
        self._read: tuple[tuple, pa.Table] | None = None  # the last row groups `apply` read, for the next batch

    @property
    def group_by(self) -> str | None:
        """The record field that groups a per-step source's records (None: one record, one trajectory)."""
        return converters.get(self.params.source).group_by

    def computed_provides(self) -> tuple[str, ...]:
        return (JOINED,) if self.group_by else ()

    def prepare(self, batch: pa.RecordBatch) -> dict[str, pa.Array] | None:
        if not self.group_by:
            return None
        keys, records = [], []
        for record in raw_records(batch, self.params.raw_column):
            # As converters.iter_convert groups: by the key's value, None for a record with no key
            # or one that is not an object (it then fails to convert with its group).
            key = record.get(self.group_by) if isinstance(record, dict) else None
            keys.append(None if key is None else orjson.dumps(key, default=str).decode())
            value = str(record) if isinstance(record, Exception) else record
            records.append(orjson.dumps(value, default=str).decode())
        return {"key": pa.array(keys, pa.string()), "record": pa.array(records, pa.string())}

    def fit(self, batches: Iterable[pa.RecordBatch], workdir: Path, parallel: Parallel = SERIAL) -> Groups | Value:
        if not self.group_by:
            return Value()  # one record per trajectory: nothing to join
        groups = _GroupFile(workdir / "groups.parquet")
        firsts: list[int] = []
        key = first_id = None
        records: list[str] = []  # of the group being read
        for batch in batches:
            columns = [batch.column(n).to_pylist() for n in ("key", "record", "_id", "_ord")]
            for row_key, record, row_id, ord_ in zip(*columns):
                if records and row_key == key:
                    records.append(record)
                    continue
                if records:
                    groups.add(first_id, records)
                key, first_id, records = row_key, row_id, [record]
                firsts.append(ord_)
        if records:
            groups.add(first_id, records)
        return Groups(str(groups.path), np.array(firsts, dtype=np.int64), groups.close())

    def _groups(self, state: Groups, lo: int, hi: int) -> pa.Table:
        """Groups lo..hi (their first_id and records), from the row groups that hold them."""
        first_rg = int(np.searchsorted(state.row_groups, lo, side="right")) - 1
        last_rg = int(np.searchsorted(state.row_groups, hi, side="right")) - 1
        key = (state.path, first_rg, last_rg)
        if self._read is None or self._read[0] != key:
            self._read = key, pq.ParquetFile(state.path).read_row_groups(range(first_rg, last_rg + 1))
        return self._read[1].slice(lo - int(state.row_groups[first_rg]), hi - lo + 1)

    def apply(self, batch: pa.RecordBatch, state: Groups | Value):
        if isinstance(state, Value):
            return batch
        ords = batch.column("_ord").to_numpy()
        group = np.searchsorted(state.firsts, ords, side="right") - 1
        first = state.firsts[group] == ords
        lo = int(group.min())
        table = self._groups(state, lo, int(group.max()))
        records, first_ids = table.column("records").to_pylist(), table.column("first_id").to_pylist()
        joined = [records[g - lo] if f else None for g, f in zip(group, first)]
        details = [None if f else f"joined into the trajectory of row {first_ids[g - lo]}"
                   for g, f in zip(group, first)]
        return Result(batch.append_column(JOINED, pa.array(joined, pa.string())), Verdict(first, "merged", details))


class _GroupFile:
    """The groups file, written a row group at a time (about ROW_GROUP_BYTES of records each)."""

    def __init__(self, path: Path):
        self.path = path
        self.writer = pq.ParquetWriter(path, GROUP_SCHEMA, compression="zstd")
        self.first_ids: list[str] = []
        self.records: list[str] = []
        self.size = 0
        self.groups = 0
        self.row_groups: list[int] = []  # index of the first group of each row group

    def add(self, first_id: str, records: list[str]) -> None:
        self.first_ids.append(first_id)
        self.records.append("[" + ",".join(records) + "]")
        self.size += len(self.records[-1])
        if self.size >= ROW_GROUP_BYTES:
            self._flush()

    def _flush(self) -> None:
        self.row_groups.append(self.groups)
        self.groups += len(self.first_ids)
        table = pa.table({"first_id": self.first_ids, "records": self.records}, schema=GROUP_SCHEMA)
        self.writer.write_table(table, row_group_size=len(self.first_ids))
        self.first_ids, self.records, self.size = [], [], 0

    def close(self) -> np.ndarray:
        if self.first_ids:
            self._flush()
        self.writer.close()
        return np.array(self.row_groups, dtype=np.int64)
