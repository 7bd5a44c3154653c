"""The members of each cluster brought together, for per-cluster work on data larger than memory.

A cluster's members are scattered over the spilled file; gathering each cluster from the memory
map costs a page fault per member, each mapping a whole page-cache folio (up to 2 MB), so either
memory or time explodes. Instead, one sequential pass appends every row (with its row number)
to the file of its group, a run of consecutive clusters of about `group_bytes`, and each group
is then read whole, by whichever worker takes it: twice the data in sequential I/O, memory
bounded by one group per worker (or by its largest cluster, which has to be in memory anyway),
disk by one more copy of the embeddings.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Union

import numpy as np

from curate_operators.prune.embeddings import EmbeddingStore

GROUP_BYTES = 128 << 20  # a worker holds one group at a time
_CHUNK = 1 << 16


def cluster_groups(sizes: np.ndarray, row_bytes: int, group_bytes: int = GROUP_BYTES) -> np.ndarray:
    """group of each cluster: consecutive clusters, a new group each `group_bytes` of rows."""
    starts = (np.cumsum(sizes) - sizes) * row_bytes // group_bytes
    return np.unique(starts, return_inverse=True)[1].reshape(-1)


@dataclass(frozen=True)
class GroupFile:
    """A group written beside an EmbeddingStore: records (row, embedding) in row order."""

    path: Path
    dtype: str
    dim: int

    @property
    def record(self) -> np.dtype:
        return np.dtype([("row", "<i8"), ("x", self.dtype, (self.dim,))])


Group = Union[GroupFile, tuple[np.ndarray, np.ndarray]]


def write_groups(embeddings, group_of_row: np.ndarray) -> list[Group]:
    """Each group, for `read_group`: of an EmbeddingStore, a GroupFile beside it (delete them
    with `discard_groups`); of an in-memory array, its (rows ascending, embeddings) itself."""
    n_groups = int(group_of_row.max()) + 1 if len(group_of_row) else 0
    if not isinstance(embeddings, EmbeddingStore):
        return [(rows, embeddings[rows]) for rows in (np.flatnonzero(group_of_row == g) for g in range(n_groups))]
    groups = [GroupFile(embeddings.path.with_name(f"group-{g:05d}.bin"), embeddings.dtype.str, embeddings.dim)
              for g in range(n_groups)]
    files = [open(g.path, "wb") for g in groups]
    try:
        for start in range(0, embeddings.rows, _CHUNK):
            x = embeddings[start:start + _CHUNK]
            of_row = group_of_row[start:start + len(x)]
            order = np.argsort(of_row, kind="stable")
            bounds = np.searchsorted(of_row[order], np.arange(n_groups + 1))
            for g in np.flatnonzero(np.diff(bounds)):
                pick = order[bounds[g]:bounds[g + 1]]
                out = np.empty(len(pick), groups[g].record)
                out["row"], out["x"] = start + pick, x[pick]
                files[g].write(out.tobytes())
    finally:
        for f in files:
            f.close()
    embeddings.release()
    return groups


def read_group(group: Group) -> tuple[np.ndarray, np.ndarray]:
    """(rows ascending, their embeddings) of a group (in any process that sees its file)."""
    if not isinstance(group, GroupFile):
        return group
    data = np.fromfile(group.path, dtype=group.record)
    return data["row"], data["x"]


def discard_groups(groups: list[Group]) -> None:
    for group in groups:
        if isinstance(group, GroupFile):
            group.path.unlink(missing_ok=True)
