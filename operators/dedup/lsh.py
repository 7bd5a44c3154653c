"""Banding: which signature rows form a band, and which bands two documents must share.

Containment (LSH Ensemble, Zhu et al., VLDB 2016). Containment t of a query of q shingles
in a candidate of x shingles is Jaccard t / (1 + x/q - t), so the Jaccard a pair must reach
falls as the size ratio grows. Documents are partitioned by size (geometric classes:
partition p holds sizes [ratio^p, ratio^(p+1))); for a query in partition i and candidates in
partition j >= i, the worst case is the smallest query against the largest candidate, and
(bands, rows) are chosen so that a pair at exactly the threshold is missed with probability
<= max_miss, using as many rows per band as that allows (fewer false candidates). Where that is
one row a band, a shared band is a single shared minimum: two documents with one common shingle
(a frequent phrase) share one band now and then, and such pairs, which grow as the square of the
corpus, made most candidates. There a pair must share two bands (`hits`), with the bands the
miss target then needs, wherever they fit in num_perm: a second coincidence is rare for such
pairs (about the square of the first's chance) and likely for a pair at the threshold.
Candidates are only searched in partitions of equal or larger size: a document can only be
removed by a larger one.

Jaccard (classic): fixed bands x rows, as datatrove and text-dedup do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa

from curate_operators.dedup.minhash import band_keys

# Documents are assumed to have fewer than 2^32 shingles; that bounds the partition index.
MAX_SET_SIZE = 2**32


def size_partition(sizes: np.ndarray, ratio: float) -> np.ndarray:
    """Geometric size class of each set size (sizes >= 1)."""
    return np.floor(np.log(np.maximum(sizes, 1)) / math.log(ratio) + 1e-9).astype(np.int16)


def miss_probability(jaccard: float, rows: int, bands: int, hits: int = 1) -> float:
    """Chance that a pair of this Jaccard shares fewer than `hits` of the bands."""
    p = jaccard**rows
    if hits == 1:
        return (1.0 - p) ** bands
    return (1.0 - p) ** bands + bands * p * (1.0 - p) ** (bands - 1)  # hits == 2


@dataclass(frozen=True)
class ContainmentPlan:
    num_perm: int
    threshold: float
    max_miss: float
    ratio: float
    max_hits: int = 2  # bands a pair may be asked to share (1: one shared band always, the rule before)

    def worst_jaccard(self, qpart: int, cpart: int) -> float:
        """Jaccard of a pair at containment == threshold, smallest query vs largest candidate."""
        size_ratio = self.ratio ** (cpart - qpart + 1)
        return self.threshold / (1.0 + size_ratio - self.threshold)

    def banding(self, qpart: int, cpart: int) -> tuple[int, int, int]:
        """(rows per band, bands, bands a pair must share) for queries in `qpart` against
        candidates in `cpart`."""
        s = self.worst_jaccard(qpart, cpart)
        for rows in range(self.num_perm, 0, -1):
            p = s**rows
            if p < 1e-12:
                continue
            if p >= 1.0:
                return rows, 1, 1
            bands = math.ceil(math.log(self.max_miss) / math.log1p(-p))
            if bands * rows <= self.num_perm:
                if rows == 1 and self.max_hits >= 2:
                    twice = next((b for b in range(bands, self.num_perm + 1)
                                  if miss_probability(s, 1, b, hits=2) <= self.max_miss), None)
                    if twice is not None:
                        return 1, twice, 2
                return rows, max(bands, 1), 1
        return 1, self.num_perm, 1

    @cached_property
    def max_partition(self) -> int:
        return int(math.ceil(math.log(MAX_SET_SIZE) / math.log(self.ratio)))

    @cached_property
    def gap_banding(self) -> list[tuple[int, int, int]]:
        # The worst-case Jaccard depends on the partition gap only.
        return [self.banding(0, gap) for gap in range(self.max_partition + 1)]

    def needs(self, part: int) -> dict[int, int]:
        """rows -> bands a document of partition `part` must emit, as query and as candidate."""
        out: dict[int, int] = {}
        for gap in range(self.max_partition + 1):
            as_query = part + gap <= self.max_partition
            as_candidate = part - gap >= 0
            if as_query or as_candidate:
                r, b, _ = self.gap_banding[gap]
                out[r] = max(out.get(r, 0), b)
        return out

    def table(self) -> pa.Table:
        """(gap, r, bands, hits) rows for the SQL that joins buckets."""
        gaps = list(range(self.max_partition + 1))
        return pa.table({
            "gap": pa.array(gaps, pa.int16()),
            "r": pa.array([self.gap_banding[g][0] for g in gaps], pa.int16()),
            "bands": pa.array([self.gap_banding[g][1] for g in gaps], pa.int16()),
            "hits": pa.array([self.gap_banding[g][2] for g in gaps], pa.int16()),
        })

    def bucket_rows(self, ords: np.ndarray, sig: np.ndarray, sizes: np.ndarray) -> pa.Table:
        """One row per (document, rows-per-band, band): the keys this batch adds to the index
        (`sizes`: the documents' shingle counts, which set their size partitions)."""
        parts = size_partition(sizes, self.ratio)
        pieces = []
        for part in np.unique(parts):
            sel = np.flatnonzero(parts == part)
            for r, bands in sorted(self.needs(int(part)).items()):
                keys = band_keys(sig[sel], r, bands)
                pieces.append(_rows(keys, ords[sel], r=r, part=int(part)))
        return pa.concat_tables(pieces) if pieces else _rows(np.zeros((0, 1), np.uint64), ords[:0], r=1, part=0)


@dataclass(frozen=True)
class JaccardPlan:
    bands: int
    rows: int

    @property
    def num_perm(self) -> int:
        return self.bands * self.rows

    def bucket_rows(self, ords: np.ndarray, sig: np.ndarray, sizes: np.ndarray | None = None) -> pa.Table:
        """One row per (document, band); sizes do not matter to Jaccard banding."""
        keys = band_keys(sig, self.rows, self.bands)
        return _rows(keys, ords, r=self.rows, part=0)


def _rows(keys: np.ndarray, ords: np.ndarray, *, r: int, part: int) -> pa.Table:
    n, bands = keys.shape
    return pa.table({
        "r": pa.array(np.full(n * bands, r, np.int16)),
        "band": pa.array(np.tile(np.arange(bands, dtype=np.int16), n)),
        "key": pa.array(keys.reshape(-1)),
        "ord": pa.array(np.repeat(ords.astype(np.int64), bands)),
        "part": pa.array(np.full(n * bands, part, np.int16)),
    })
