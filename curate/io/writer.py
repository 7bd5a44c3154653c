"""Parquet shard writing: every file appears under its final name only once complete."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def atomic_write_bytes(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


class ShardWriter:
    """Writes batches to `<dir>/<prefix>-NNN.parquet`, starting a new shard past `shard_bytes`.

    Shards are written as `*.tmp` and renamed on close, so a killed run never leaves a
    partial shard under a final name. A schema change between batches (a column that was
    all-null in earlier batches, say) is handled by casting to the first schema.
    """

    def __init__(self, directory: Path, prefix: str, *, shard_bytes: int = 256 << 20,
                 compression: str = "zstd", row_group_rows: int = 64 * 1024, row_group_bytes: int = 64 << 20):
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
        if self._pending_rows >= self.row_group_rows or self._pending_bytes >= self.row_group_bytes:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        if self._writer is None:
            self._open()
        self._writer.write_table(pa.Table.from_batches(self._pending), row_group_size=max(self._pending_rows, 1))
        self._pending, self._pending_rows, self._pending_bytes = [], 0, 0
        if self._tmp.stat().st_size >= self.shard_bytes:
            self._finish_shard()

    def _open(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        final = self.directory / f"{self.prefix}-{len(self.paths):03d}.parquet"
        self._tmp = final.with_name(final.name + ".tmp")
        self._writer = pq.ParquetWriter(self._tmp, self._schema, compression=self.compression,
                                        write_statistics=True, store_schema=True)
        self.paths.append(final)

    def _finish_shard(self) -> None:
        self._writer.close()
        os.replace(self._tmp, self.paths[-1])
        self._writer = None

    def close(self) -> list[Path]:
        self._flush()
        if self._writer is not None:
            self._finish_shard()
        return self.paths

    def abort(self) -> None:
        self._pending = []
        if self._writer is not None:
            self._writer.close()
            self._tmp.unlink(missing_ok=True)
            self._writer = None
            self.paths.pop()


def _conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    if set(batch.schema.names) != set(schema.names):
        raise ValueError(f"batch columns {batch.schema.names} differ from the shard's {schema.names}")
    batch = batch.select(schema.names)
    return batch.cast(schema)
