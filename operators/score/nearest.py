"""The k nearest rows of every row by inner product (faiss), in memory or in pieces that fit a budget.

In memory: one faiss index over every row (flat, or IVF trained on a seeded sample), searched
in chunks of queries. In pieces, the same search without the (n, d) matrix, each query's
candidates merged across pieces into its best k (missing ones, id -1, last):
- flat: the rows in blocks of whole BLAS tiles of faiss's (its database block, 1024 rows), so
  every similarity is computed on the same tile as in one index, to the same bits;
- IVF: the same trained quantizer; every row's list as `add` finds it (batches of 65536), every
  query's probed lists as `search` finds them (its chunk cut into one slice per thread), saved to
  the work directory; then groups of whole lists, one group's vectors in memory at a time, in an
  index whose other lists are empty, searched with those probes (`search_preassigned`). A list
  keeps its rows in row order, as `add` leaves it, and faiss scores a row of a list the same
  way whichever other lists are filled.
The similarities found are the same; where several rows tie at the k-th place, a different
one of them may be kept, with the same similarity.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import numpy as np

from curate_operators.prune.embeddings import UnitRows

QUERY_CHUNK = 1 << 14
TILE = 1024  # faiss's distance_compute_blas_database_bs
ADD_BATCH = 65536  # IndexIVF.add's batches: each is assigned to lists in one quantizer search


def ivf_lists(n: int) -> int:
    """4 sqrt(n), at most n (below 16 rows faiss could not train that many lists)."""
    return min(n, int(4 * np.sqrt(n)))


def trained_ivf(x, seed: int):
    """An empty IndexIVFFlat (inner product) trained on a seeded sample of x's rows."""
    import faiss

    n, d = x.shape
    lists = ivf_lists(n)
    index = faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, lists, faiss.METRIC_INNER_PRODUCT)
    train = np.random.default_rng(seed).choice(n, min(n, 64 * lists), replace=False)
    index.train(x[np.sort(train)])
    return index


def in_memory(x: np.ndarray, k1: int, exact: bool, nprobe: int, seed: int) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """(start, sims, ids) of each chunk of queries: their k1 best rows, from one index of every row."""
    import faiss

    d = x.shape[1]
    if exact:
        index = faiss.IndexFlatIP(d)
    else:
        index = trained_ivf(x, seed)
        index.nprobe = nprobe
    index.add(x)
    for start in range(0, len(x), QUERY_CHUNK):
        sims, ids = index.search(x[start:start + QUERY_CHUNK], k1)
        yield start, sims, ids


def best(sims: np.ndarray, ids: np.ndarray, k1: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's k1 largest similarities (and their ids), missing ones (id -1) last."""
    if sims.shape[1] < k1:
        pad = k1 - sims.shape[1]
        sims = np.pad(sims, ((0, 0), (0, pad)), constant_values=-np.inf)
        ids = np.pad(ids, ((0, 0), (0, pad)), constant_values=-1)
    order = np.argsort(-np.where(ids >= 0, sims, -np.inf), axis=1, kind="stable")[:, :k1]
    return np.take_along_axis(sims, order, 1), np.take_along_axis(ids, order, 1)


def flat_in_blocks(x: UnitRows, k1: int, budget: int) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """As `in_memory(exact=True)`, holding one block of rows (about `budget` bytes) at a time."""
    import faiss

    n, d = x.shape
    # A block is held about four times at once: as read, as unit vectors, faiss's copy, the search's own.
    block = max(TILE, budget // (4 * 4 * d) // TILE * TILE)
    for start in range(0, n, QUERY_CHUNK):
        queries = x[start:start + QUERY_CHUNK]
        sims = np.zeros((len(queries), 0), np.float32)
        ids = np.zeros((len(queries), 0), np.int64)
        for at in range(0, n, block):
            index = faiss.IndexFlatIP(d)
            index.add(x[at:at + block])
            s, i = index.search(queries, min(k1, index.ntotal))
            sims, ids = best(np.hstack([sims, s]), np.hstack([ids, np.where(i >= 0, i + at, -1)]), k1)
        yield start, sims, ids


def ivf_in_groups(x: UnitRows, k1: int, nprobe: int, seed: int, budget: int,
                  workdir: Path) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """As `in_memory(exact=False)`, holding one group of lists (about `budget` bytes) at a time;
    the rows' lists, the queries' probes and the best so far go to files under `workdir`."""
    import faiss

    n, d = x.shape
    trained = trained_ivf(x, seed)
    quantizer, lists = trained.quantizer, trained.nlist
    probes = min(nprobe, lists)
    labels = _Rows(workdir / "labels.i32", np.int32, 1)
    for at in range(0, n, ADD_BATCH):
        labels.write(at, quantizer.assign(x[at:at + ADD_BATCH], 1).astype(np.int32))
    assigned = _Rows(workdir / "probes.i32", np.int32, probes)
    closeness = _Rows(workdir / "probes.f32", np.float32, probes)
    threads = faiss.omp_get_max_threads()
    for start in range(0, n, QUERY_CHUNK):
        queries = x[start:start + QUERY_CHUNK]
        m = len(queries)
        slices = min(threads, m)
        for s in range(slices):  # IndexIVF.search: a quantizer search per thread's slice
            lo, hi = m * s // slices, m * (s + 1) // slices
            if hi > lo:
                dist, near = quantizer.search(queries[lo:hi], probes)
                assigned.write(start + lo, near.astype(np.int32))
                closeness.write(start + lo, dist)
    sizes = np.zeros(lists, np.int64)
    for at in range(0, n, ADD_BATCH):
        sizes += np.bincount(labels.read(at, ADD_BATCH)[:, 0], minlength=lists)
    found_sims = _Rows(workdir / "best.f32", np.float32, k1)
    found_ids = _Rows(workdir / "best.i64", np.int64, k1)
    # A group's vectors are held twice while its lists are filled (gathered, faiss's copy); the third
    # share of the budget is the search's and the process's own (a batch of x as read, the queries).
    for g, (first, stop) in enumerate(_groups(sizes, max(1, budget // (3 * (4 * d + 8))))):
        index = faiss.IndexIVFFlat(quantizer, d, lists, faiss.METRIC_INNER_PRODUCT)
        index.nprobe = probes
        _fill(index, x, labels, first, stop)
        for start in range(0, n, QUERY_CHUNK):
            near = assigned.read(start, QUERY_CHUNK).astype(np.int64)  # lists outside the group are empty here
            s, i = index.search_preassigned(x[start:start + QUERY_CHUNK], k1, near, closeness.read(start, QUERY_CHUNK))
            if g:
                s, i = best(np.hstack([found_sims.read(start, len(s)), s]),
                            np.hstack([found_ids.read(start, len(s)), i]), k1)
            found_sims.write(start, s)
            found_ids.write(start, i)
        del index
    for start in range(0, n, QUERY_CHUNK):
        yield start, found_sims.read(start, QUERY_CHUNK), found_ids.read(start, QUERY_CHUNK)
    for f in (labels, assigned, closeness, found_sims, found_ids):
        f.path.unlink(missing_ok=True)


def _groups(sizes: np.ndarray, rows: int) -> list[tuple[int, int]]:
    """Runs of consecutive lists holding about `rows` rows each (a larger list alone)."""
    out, first, held = [], 0, 0
    for lst, size in enumerate(sizes.tolist()):
        if held and held + size > rows:
            out.append((first, lst))
            first, held = lst, 0
        held += size
    out.append((first, len(sizes)))
    return out


def _fill(index, x: UnitRows, labels: "_Rows", first: int, stop: int) -> None:
    """The rows of lists first..stop-1 into `index` (one pass over x), each list's rows in row order.
    The group's vectors are gathered once, straight to their place in list order (its rows found
    first from the labels alone): held twice at most, with faiss's copy."""
    import faiss

    rows, where = [], []
    for at in range(0, len(x), ADD_BATCH):
        lab = labels.read(at, ADD_BATCH)[:, 0]
        mine = np.flatnonzero((lab >= first) & (lab < stop))
        rows.append(mine + at)
        where.append(lab[mine])
    counts = [len(r) for r in rows]
    rows, where = np.concatenate(rows), np.concatenate(where)
    if not len(rows):
        return
    order = np.argsort(where, kind="stable")  # a list's rows stay in row order
    place = np.empty_like(order)
    place[order] = np.arange(len(order))
    vectors = np.empty((len(rows), x.shape[1]), np.float32)
    done = 0
    for at, count in zip(range(0, len(x), ADD_BATCH), counts):
        if count:
            mine = rows[done:done + count]
            vectors[place[done:done + count]] = x[at:at + ADD_BATCH][mine - at]
            done += count
    rows, where = rows[order], where[order]
    bounds = [0, *(np.flatnonzero(np.diff(where)) + 1).tolist(), len(rows)]
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        index.invlists.add_entries(int(where[lo]), hi - lo, faiss.swig_ptr(rows[lo:hi]),
                                   faiss.swig_ptr(vectors[lo:hi].view(np.uint8)))
    index.ntotal = len(rows)


class _Rows:
    """A file of fixed-width rows of one dtype, read and written by row offset (no mapping, so
    nothing of it stays resident)."""

    def __init__(self, path: Path, dtype, width: int):
        self.path, self.dtype, self.width = Path(path), np.dtype(dtype), width
        self.path.unlink(missing_ok=True)
        self.path.touch()

    def read(self, start: int, count: int) -> np.ndarray:
        row = self.dtype.itemsize * self.width
        return np.fromfile(self.path, self.dtype, count * self.width, offset=start * row).reshape(-1, self.width)

    def write(self, start: int, values: np.ndarray) -> None:
        with open(self.path, "r+b") as f:
            f.seek(start * self.dtype.itemsize * self.width)
            f.write(np.ascontiguousarray(values, self.dtype).tobytes())
