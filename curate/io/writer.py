"""Parquet shard writing: every file appears under its final name only once complete."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

_SIZE_BLOCK_ROWS = 1024  # row-group size is measured in blocks of this many rows


class ShardWriter:
    """Writes batches to `<dir>/<prefix>-NNN.parquet`, starting a new shard past `shard_bytes`.

    Shards are written as `*.tmp` and renamed on close, so a killed run never leaves a
    partial shard under a final name. A schema change between batches (a column that was
    all-null in earlier batches, say) is handled by casting to the first schema.
    """

    def __init__(
        self,
        directory: Path,
        prefix: str,
        *,
        shard_bytes: int = 256 << 20,
        compression: str = "zstd",
        row_group_rows: int = 64 * 1024,
        row_group_bytes: int = 64 << 20,
    ):
        self.directory = Path(directory)
        self.prefix = prefix
        self.shard_bytes = shard_bytes
        self.compression = None if compression == "none" else compression
        self.row_group_rows = row_group_rows
        self.row_group_bytes = row_group_bytes
        self._pending: list[pa.RecordBatch] = []  # batches of the next row group
        self._pending_rows = 0
        self._pending_bytes = 0
        self.paths: list[Path] = []
        self.rows = 0
        self.shard_rows: list[int] = []  # rows in each of `paths` (a later stage plans from them)
        self._writer: pq.ParquetWriter | None = None
        self._tmp: Path | None = None
        self._schema: pa.Schema | None = None

    def write(self, batch: pa.RecordBatch) -> None:
        """Buffer `batch`; whole row groups (row_group_rows or row_group_bytes) go to disk."""
        if batch.num_rows == 0:
            return
        if self._schema is None:
            self._schema = batch.schema
        elif batch.schema != self._schema:
            batch = _conform(batch, self._schema)
        self._pending.append(batch)
        self._pending_rows += batch.num_rows
        self._pending_bytes += batch.nbytes
        self.rows += batch.num_rows
        # The exact cut is measured in blocks (below); batch sizes only say when to look.
        while self._pending_rows >= self.row_group_rows or self._pending_bytes >= 0.9 * self.row_group_bytes:
            rows = self._next_group_rows()
            if rows is None:
                break
            self._flush(rows)

    def _next_group_rows(self) -> int | None:
        """Rows of the next full row group, or None until it is complete: row_group_rows, or fewer
        once the group reaches row_group_bytes, measured over fixed blocks of rows from the group's
        start. Cuts depend on the rows alone, never on how they arrived in batches, so the bytes
        written do not depend on batch sizes (an operator's batch_rows, the input's batch_rows)."""
        table = pa.Table.from_batches(self._pending)
        size = start = 0
        while start < self.row_group_rows:
            block_rows = min(_SIZE_BLOCK_ROWS, self.row_group_rows - start)
            if start + block_rows > table.num_rows:
                return None
            size += table.slice(start, block_rows).nbytes
            start += block_rows
            if size >= self.row_group_bytes:
                return start
        return self.row_group_rows

    def _flush(self, rows: int | None = None) -> None:
        """Write the first `rows` pending rows (all of them by default) as one row group."""
        if not self._pending:
            return
        if self._writer is None:
            self._open()
        assert self._writer is not None and self._tmp is not None  # _open set both
        table = pa.Table.from_batches(self._pending)
        rows = table.num_rows if rows is None else rows
        self._writer.write_table(table.slice(0, rows), row_group_size=max(rows, 1))
        self.shard_rows[-1] += rows
        self._pending = table.slice(rows).to_batches()
        self._pending_rows = table.num_rows - rows
        self._pending_bytes = sum(b.nbytes for b in self._pending)
        if self._tmp.stat().st_size >= self.shard_bytes:
            self._finish_shard()

    def _open(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        final = self.directory / f"{self.prefix}-{len(self.paths):03d}.parquet"
        self._tmp = final.with_name(final.name + ".tmp")
        self._writer = pq.ParquetWriter(
            self._tmp, self._schema, compression=self.compression, write_statistics=True, store_schema=True
        )
        self.paths.append(final)
        self.shard_rows.append(0)

    def _finish_shard(self) -> None:
        assert self._writer is not None and self._tmp is not None  # a shard is open
        self._writer.close()
        os.replace(self._tmp, self.paths[-1])
        self._writer = None

    def close(self) -> list[Path]:
        while self._pending_rows > self.row_group_rows or self._pending_bytes >= 0.9 * self.row_group_bytes:
            rows = self._next_group_rows()
            if rows is None or rows >= self._pending_rows:
                break
            self._flush(rows)
        self._flush()
        if self._writer is not None:
            self._finish_shard()
        return self.paths

    def abort(self) -> None:
        self._pending = []
        if self._writer is not None:
            self._writer.close()
            assert self._tmp is not None  # set with _writer
            self._tmp.unlink(missing_ok=True)
            self._writer = None
            self.paths.pop()
            self.shard_rows.pop()


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    if set(batch.schema.names) != set(schema.names):
        raise ValueError(f"batch columns {batch.schema.names} differ from the shard's {schema.names}")
    batch = batch.select(schema.names)
    return batch.cast(schema)
