"""phash_dedup: near-duplicate images by perceptual hash, no model: rows whose pHashes
(image_hash.phash) are at most `max_distance` bits apart are duplicates; each connected group
keeps its best row (highest `prefer`, then the first), the others go to the trace as
`near_duplicate`, detail `duplicate of <_id>` (the kept row of the group), as minhash_dedup.

prepare hashes each image in the stage's workers. The fit finds every pair within the distance
exactly: the 64 bits are cut into max_distance + 1 pieces, and two hashes that close agree on
at least one piece (pigeonhole), so only hashes sharing a piece are compared. The work grows with
the pairs sharing a piece (about n^2 / 2^(64 / (max_distance + 1)) for random hashes), and the
hashes are held in memory (8 bytes a row). Images that do not decode have no hash and stay.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import Field

from curate.fit_state import ROW_GROUP_ROWS, Decisions
from curate.ops import SERIAL, Global, Parallel, Params, Verdict, reads_column
from curate_operators.dedup.image_hash import encoded_images, phash, popcount64
from curate_operators.dedup.resolve import union_find

PAIR_CHUNK = 1 << 20  # candidate pairs verified at a time


class PhashDedupParams(Params):
    image_column: str = reads_column("image", "Encoded image bytes.")
    max_distance: int = Field(4, ge=0, le=16, description="Largest Hamming distance between the 64-bit pHashes "
                              "of two duplicates (0: the same hash).")
    prefer: str | None = reads_column(None, "Keep the row with the highest value of this column (then the first).")
    prefer_order: Literal["desc", "asc"] = Field("desc", description="Whether the highest or lowest `prefer` wins.")


def piece_masks(max_distance: int) -> list[int]:
    """max_distance + 1 disjoint bit masks covering the 64 bits."""
    pieces = max_distance + 1
    bounds = [round(64 * i / pieces) for i in range(pieces + 1)]
    return [((1 << (hi - lo)) - 1) << lo for lo, hi in zip(bounds, bounds[1:])]


def close_pairs(hashes: np.ndarray, max_distance: int) -> Iterable[tuple[np.ndarray, np.ndarray]]:
    """Chunks (i, j) of every pair i < j with popcount(h_i ^ h_j) <= max_distance (a pair may
    come more than once: union-find does not mind)."""
    n = len(hashes)
    for mask in piece_masks(max_distance):
        keys = hashes & np.uint64(mask)
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
        sizes = np.diff(np.r_[starts, n])
        left, right = [], []
        for start, size in zip(starts[sizes > 1], sizes[sizes > 1]):
            members = order[start:start + size]
            a, b = np.triu_indices(size, k=1)
            left.append(members[a])
            right.append(members[b])
            if sum(map(len, left)) >= PAIR_CHUNK:
                yield from _verified(hashes, left, right, max_distance)
                left, right = [], []
        yield from _verified(hashes, left, right, max_distance)


def _verified(hashes, left, right, max_distance):
    if left:
        i, j = np.concatenate(left), np.concatenate(right)
        close = popcount64(hashes[i] ^ hashes[j]) <= max_distance
        yield i[close], j[close]


class PhashDedup(Global):
    """Remove near-duplicate images: perceptual hashes within max_distance bits (no model)."""

    name = "phash_dedup"
    Params = PhashDedupParams

    @property
    def fit_columns(self) -> tuple[str, ...]:
        """`prepare` hashed the images: `fit` reads only `prefer`."""
        return (self.params.prefer,) if self.params.prefer else ()

    def prepare(self, batch: pa.RecordBatch) -> dict[str, pa.Array]:
        images = encoded_images(batch, self.params.image_column, self.name)
        return {"phash": pa.array([phash(b) for b in images], pa.uint64())}

    def fit(self, batches: Iterable[pa.RecordBatch], workdir: Path, parallel: Parallel = SERIAL) -> Decisions:
        p = self.params
        parts = [pa.table({"phash": b.column("phash"), "_ord": b.column("_ord"), "_id": b.column("_id").cast(pa.string()),
                           "prefer": b.column(p.prefer).cast(pa.float64()) if p.prefer else pa.nulls(b.num_rows, pa.float64())})
                 for b in batches]
        path = workdir / "removed.parquet"
        table = pa.concat_tables(parts) if parts else None
        table = table.filter(pc.is_valid(table.column("phash"))) if table is not None else None
        if table is None or table.num_rows < 2:
            return Decisions(str(path), reason="near_duplicate", removed=0)
        ords = table.column("_ord").to_numpy()
        prefer = table.column("prefer").to_numpy(zero_copy_only=False)
        # rank 0 = kept first: the best `prefer` (nulls last), then the smallest _ord
        primary = np.where(np.isnan(prefer), np.inf, -prefer if p.prefer_order == "desc" else prefer)
        by_rank = np.lexsort((ords, primary))
        hashes = table.column("phash").to_numpy()[by_rank]
        roots = union_find(close_pairs(hashes, p.max_distance), len(hashes))
        removed = np.flatnonzero(roots != np.arange(len(roots)))
        ids = table.column("_id").take(pa.array(by_rank))
        out = pa.table({"_ord": pa.array(ords[by_rank][removed], pa.int64()),
                        "detail": pc.binary_join_element_wise("duplicate of ", ids.take(pa.array(roots[removed])), "")})
        pq.write_table(out.sort_by("_ord"), path, row_group_size=ROW_GROUP_ROWS)
        return Decisions(str(path), reason="near_duplicate", removed=len(removed))

    def apply(self, batch: pa.RecordBatch, state: Decisions) -> Verdict:
        return state.verdict(batch)
