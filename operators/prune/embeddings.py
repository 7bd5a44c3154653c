"""The embeddings a Global step decides on, spilled to its work directory and memory-mapped.

`fit` streams batches once; their embedding column goes to one raw file (rows in `_ord` order,
stored in the input's dtype: float16 input stays float16, so 10M x 512 is 10 GB of disk, not of
memory). The store then reads like an (n, d) array; the mapped pages it touched are handed back
(madvise DONTNEED) whenever they may exceed a budget, so resident memory stays bounded however
large the file is. The page cache keeps them, so touching them again is cheap while the file
fits in RAM; beyond that, per-cluster gathers become random reads from disk.
"""

from __future__ import annotations

import mmap
from pathlib import Path
from typing import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from curate.errors import CurateError

_FLOATS = {pa.float16(): np.float16, pa.float32(): np.float32, pa.float64(): np.float32}


def _is_list(kind: pa.DataType) -> bool:
    return pa.types.is_fixed_size_list(kind) or pa.types.is_list(kind) or pa.types.is_large_list(kind)


def embedding_type_problem(kind: pa.DataType) -> str | None:
    """Why a column of type `kind` cannot hold embeddings, or None: a fixed-size list of floats, or
    a list of floats (list<float>, as pandas, polars or a JSON round trip leave them; each batch's
    rows must then be of one size), is accepted; `null` (a type known only from the data) too."""
    if pa.types.is_null(kind) or (_is_list(kind) and kind.value_type in _FLOATS):
        return None
    return f"must hold embeddings as fixed_size_list<float16|float32>[d] (or list<float>), got {kind}"


def embedding_matrix(batch: pa.RecordBatch, column: str, step: str) -> np.ndarray:
    """The (rows, d) float array of `column`; anything but a (fixed-size) list of floats of one
    size without nulls or non-finite values is a CurateError naming the step and the column."""
    if column not in batch.schema.names:
        raise CurateError(f"{step}: column '{column}' (embedding_column) is not there; columns are: "
                          f"{', '.join(n for n in batch.schema.names if n != '_ord')}. Add an embed step before it")
    col = batch.column(column)
    kind = col.type
    if not _is_list(kind) or kind.value_type not in _FLOATS:
        raise CurateError(f"{step}: column '{column}' {embedding_type_problem(kind)}")
    if col.null_count:
        first = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
        raise CurateError(f"{step}: column '{column}' is null at row {first} of a batch; every row needs an embedding")
    if pa.types.is_fixed_size_list(kind):
        dim = kind.list_size
    else:  # list<float>: every row of one size, as a fixed-size list would be
        sizes = pc.list_value_length(col).to_numpy(zero_copy_only=False)
        dim = int(sizes[0]) if len(sizes) else 0
        if len(sizes) and (sizes != dim).any():
            bad = int(np.flatnonzero(sizes != dim)[0])
            raise CurateError(f"{step}: column '{column}' has embeddings of size {int(sizes[bad])} at row {bad} of a "
                              f"batch and of size {dim} before; all rows need the same size")
    values = col.flatten()
    x = values.to_numpy(zero_copy_only=False).reshape(len(col), dim)
    finite = np.isfinite(x).all(axis=1)  # null values come out of to_numpy as NaN
    if not finite.all():
        bad = int(np.flatnonzero(~finite)[0])
        raise CurateError(f"{step}: column '{column}' holds a null, NaN or infinite value (row {bad} of a batch)")
    return x.astype(_FLOATS[kind.value_type], copy=False)


def unit32(x: np.ndarray) -> np.ndarray:
    """Rows as float32 unit vectors (the input is meant to be L2-normalised already; float16
    storage leaves norms ~1e-3 off, which would shift cosines near 1). Zero rows stay zero."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def unit64(x: np.ndarray) -> np.ndarray:
    """Rows as float64 unit vectors: for distances to centroids, which order rows, so that
    near-ties are resolved by the data rather than by float32 rounding."""
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


# Resident bytes of the mapping before its pages are handed back.
RESIDENT_BUDGET = 128 << 20
# What one row gathered from a random place may make resident: a fault maps the pages around
# it (fault-around) or its whole page-cache folio, which recent kernels make up to 2 MB.
FAULT_BYTES = 2 << 20


class EmbeddingStore:
    """An (n, d) read-only view of the spilled file: `store[i:j]` and `store[rows]` as numpy
    copies, read in pieces so that about `budget` bytes of the mapping at most are resident."""

    def __init__(self, path: Path, rows: int, dim: int, dtype, budget: int = RESIDENT_BUDGET):
        self.path, self.rows, self.dim, self.dtype = Path(path), rows, dim, np.dtype(dtype)
        self.shape = (rows, dim)
        self.budget = budget
        self._touched = 0
        self._map = None
        self._array = np.zeros((0, dim), self.dtype)
        if rows:
            with open(self.path, "rb") as f:
                self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            self._array = np.frombuffer(self._map, dtype=self.dtype).reshape(rows, dim)

    def __len__(self) -> int:
        return self.rows

    def __reduce__(self):
        """Pickles as its file (pieces of a fit open it in their own process; the file is on the
        workdir, which every worker sees)."""
        return EmbeddingStore, (self.path, self.rows, self.dim, self.dtype.str, self.budget)

    def __getitem__(self, index: slice | np.ndarray) -> np.ndarray:  # slices with step 1
        row_bytes = self.dim * self.dtype.itemsize
        if isinstance(index, slice):
            start, stop, _ = index.indices(self.rows)
            index = range(start, max(start, stop))  # pieces of it are slices: no index arrays
            cost = row_bytes  # consecutive rows: their own pages
        else:
            index = np.asarray(index, dtype=np.int64)
            cost = max(row_bytes, FAULT_BYTES)
        piece = max(1, self.budget // max(cost, 1))  # cost 0: a store of no rows has no columns either
        out = np.empty((len(index), self.dim), self.dtype)
        for at in range(0, len(index), piece):
            rows = index[at:at + piece]
            if self._touched + len(rows) * cost > self.budget:
                self.release()
            out[at:at + len(rows)] = self._array[slice(rows.start, rows.stop) if isinstance(rows, range) else rows]
            self._touched += len(rows) * cost
        return out

    def discard(self) -> None:
        """Unmap and delete the file (the decisions no longer need it)."""
        self._array = np.zeros((0, self.dim), self.dtype)
        if self._map is not None:
            self._map.close()
            self._map = None
        self.path.unlink(missing_ok=True)

    def release(self) -> None:
        """Drop this process's mapped pages (they stay in the page cache)."""
        self._touched = 0
        if self._map is not None:
            self._map.madvise(mmap.MADV_DONTNEED)


class UnitRows:
    """The store's rows as float32 unit vectors (unit32), read when indexed (`x[i:j]`, `x[rows]`,
    `x[i]`): a selection walks the rows in pieces without the (n, d) float32 matrix in memory.
    unit32 works row by row, so a row reads the same here as in unit32 of the whole store."""

    def __init__(self, store: EmbeddingStore):
        self.store, self.shape = store, store.shape

    def __len__(self) -> int:
        return self.store.rows

    def __getitem__(self, index) -> np.ndarray:
        if isinstance(index, (int, np.integer)):
            return unit32(self.store[np.array([index])])[0]
        return unit32(self.store[index])


def spill(batches: Iterable[pa.RecordBatch], column: str, workdir: Path, step: str,
          ids: bool = False) -> EmbeddingStore:
    """Write the embeddings of `batches` (in `_ord` order) under `workdir`; with `ids`, also
    their `_id`s to ids.parquet (row i = _ord i), for trace details that name other rows."""
    path = workdir / "embeddings.bin"
    rows, dim, dtype = 0, None, None
    id_writer = None
    try:
        with open(path, "wb") as f:
            for batch in batches:
                ords = batch.column("_ord").to_numpy()
                if len(ords) and (ords[0] != rows or ords[-1] != rows + len(ords) - 1):
                    raise RuntimeError(f"{step}: fit batches must come in _ord order from 0 (got {ords[0]} at {rows})")
                x = embedding_matrix(batch, column, step)
                if dim is None:
                    dim, dtype = x.shape[1], x.dtype
                elif x.shape[1] != dim:
                    raise CurateError(f"{step}: column '{column}' has embeddings of size {x.shape[1]} at row "
                                      f"{rows} and of size {dim} before; all rows need the same size")
                f.write(np.ascontiguousarray(x, dtype=dtype).tobytes())
                if ids:
                    table = pa.table({"_id": batch.column("_id").cast(pa.string())})
                    if id_writer is None:
                        id_writer = pq.ParquetWriter(workdir / "ids.parquet", table.schema)
                    id_writer.write_table(table)
                rows += len(ords)
    finally:
        if id_writer is not None:
            id_writer.close()
    return EmbeddingStore(path, rows, dim or 0, dtype or np.float32)


def ids_at(workdir: Path, rows: np.ndarray) -> pa.Array:
    """The `_id`s of the given rows (spilled by `spill(..., ids=True)`)."""
    if not len(rows):
        return pa.array([], pa.string())
    return pq.read_table(workdir / "ids.parquet").column("_id").take(pa.array(rows)).combine_chunks()
