"""The members of each cluster brought together, for per-cluster work on data larger than memory.

A cluster's members are scattered over the spilled file; gathering each cluster from the memory
map costs a page fault per member, each mapping a whole page-cache folio (up to 2 MB), so either
memory or time explodes. Instead, one sequential pass appends every row (with its row number)
to the file of its group, a run of consecutive clusters of about `group_bytes`, and each group
is then read whole: twice the data in sequential I/O, memory bounded by one group (or by its
largest cluster, which has to be in memory anyway), disk by one more copy of the embeddings.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from operators.prune.embeddings import EmbeddingStore

GROUP_BYTES = 128 << 20  # two groups are in memory while the next is read
_CHUNK = 1 << 16


def cluster_groups(sizes: np.ndarray, row_bytes: int, group_bytes: int = GROUP_BYTES) -> np.ndarray:
    """group of each cluster: consecutive clusters, a new group each `group_bytes` of rows."""
    starts = (np.cumsum(sizes) - sizes) * row_bytes // group_bytes
    return np.unique(starts, return_inverse=True)[1].reshape(-1)


def by_group(embeddings, group_of_row: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(rows ascending, their embeddings) of each group in turn; an EmbeddingStore goes through
    group files beside it, deleted as they are read, an in-memory array is simply indexed."""
    n_groups = int(group_of_row.max()) + 1 if len(group_of_row) else 0
    if not isinstance(embeddings, EmbeddingStore):
        for g in range(n_groups):
            rows = np.flatnonzero(group_of_row == g)
            yield rows, embeddings[rows]
        return
    record = np.dtype([("row", "<i8"), ("x", embeddings.dtype, (embeddings.dim,))])
    paths = [embeddings.path.with_name(f"group-{g:05d}.bin") for g in range(n_groups)]
    files = [open(p, "wb") for p in paths]
    try:
        for start in range(0, embeddings.rows, _CHUNK):
            x = embeddings[start:start + _CHUNK]
            groups = group_of_row[start:start + len(x)]
            order = np.argsort(groups, kind="stable")
            bounds = np.searchsorted(groups[order], np.arange(n_groups + 1))
            for g in np.flatnonzero(np.diff(bounds)):
                pick = order[bounds[g]:bounds[g + 1]]
                out = np.empty(len(pick), record)
                out["row"], out["x"] = start + pick, x[pick]
                files[g].write(out.tobytes())
    finally:
        for f in files:
            f.close()
    embeddings.release()
    for path in paths:
        data = np.fromfile(path, dtype=record)
        path.unlink()
        yield data["row"], data["x"]
