"""SemDeDup's core (Abbas et al. 2023), given embeddings, centroids and assignments.

Within each cluster, members are ordered (order.py: "hard" = farthest from the centroid first);
member j's score is its max cosine similarity to any earlier member, and j is a duplicate for
eps when that score is > 1 - eps. Greedy and non-transitive like the reference: j goes even if
the member it matched went too. One pass gives the scores, so any number of eps values can be
evaluated afterwards.

Clusters are read a group of clusters at a time (groups.py), each group a piece of the fit's
`parallel` map (the run's workers), and the similarity of a cluster is computed in column
blocks of the upper triangle (rows 0..j1 of the order against columns j0..j1), at most `block`
float32 values at once, so a cluster of 50k rows never holds a 50k x 50k matrix.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
from threadpoolctl import threadpool_limits

from curate.ops import SERIAL, Parallel
from curate_operators.prune.embeddings import unit32
from curate_operators.prune.groups import GROUP_BYTES, Group, cluster_groups, discard_groups, read_group, write_groups
from curate_operators.prune.order import Mode, centroid_distances, cluster_order, cluster_starts

BLOCK = 1 << 23  # float32 values of one similarity block: 32 MB


@dataclass
class SemDeDupScores:
    max_similarity: np.ndarray  # float32 per row: max cosine to an earlier member; -inf for the first
    match: np.ndarray  # int64 per row: that earlier member's row, -1 for the first of its cluster
    dist: np.ndarray  # float64 per row: 1 - cos to its centroid
    labels: np.ndarray  # int32 per row: its cluster

    def removed(self, eps: float) -> np.ndarray:
        """Rows SemDeDup removes at `eps` (compared in float64: 1 - eps for tiny eps is not a float32)."""
        return self.max_similarity.astype(np.float64) > 1.0 - eps


def scores(embeddings, centroids: np.ndarray, labels: np.ndarray, *, order: Mode = "hard", seed: int = 0,
           block: int = BLOCK, group_bytes: int = GROUP_BYTES, parallel: Parallel = SERIAL) -> SemDeDupScores:
    """SemDeDup scores of every row of `embeddings` ((n, d) array or EmbeddingStore); each group
    of clusters is a piece of `parallel`."""
    n, k = len(labels), len(centroids)
    dist = centroid_distances(embeddings, centroids, labels)
    perm = cluster_order(labels, dist, order, seed)
    starts = cluster_starts(labels, k)
    best = np.full(n, -np.inf, dtype=np.float32)
    match = np.full(n, -1, dtype=np.int64)
    row_bytes = embeddings.shape[1] * np.dtype(embeddings.dtype).itemsize
    group = cluster_groups(np.diff(starts), row_bytes, group_bytes)
    first = np.searchsorted(group, np.arange(group.max() + 2))  # group g: clusters first[g]..first[g + 1]
    groups = write_groups(embeddings, group[labels])
    members = [[perm[starts[c]:starts[c + 1]] for c in range(first[g], first[g + 1])] for g in range(len(groups))]
    try:
        for rows, b, m in parallel.map(partial(group_scores, block), groups, members):
            best[rows], match[rows] = b, m
    finally:
        discard_groups(groups)
    return SemDeDupScores(best, match, dist, labels)


def group_scores(block: int, group: Group, clusters: list[np.ndarray]):
    """One piece: the scores of a group's clusters (each cluster's members in order); returns
    (rows, max similarity, match) of their members."""
    rows, x = read_group(group)
    out = np.concatenate(clusters)
    best = np.full(len(out), -np.inf, dtype=np.float32)
    match = np.full(len(out), -1, dtype=np.int64)
    at = 0
    # OpenBLAS's float32 products differ in the last bits with its thread count, which would make
    # a similarity (and, at the threshold, a decision) depend on where the piece ran: one thread
    # everywhere; the pieces themselves run in parallel.
    with threadpool_limits(1, user_api="blas"):
        for members in clusters:
            if len(members) > 1:
                _cluster(unit32(x[np.searchsorted(rows, members)]), members, block,
                         best[at:at + len(members)], match[at:at + len(members)])
            at += len(members)
    return out, best, match


def _cluster(x: np.ndarray, members: np.ndarray, block: int, best: np.ndarray, match: np.ndarray) -> None:
    """Scores of one cluster's members (x: their unit rows, in order) into best and match (one
    value per member, in that order)."""
    m = len(members)
    width = max(1, min(m, block // m))
    below = np.tril(np.ones((width, width), dtype=bool))  # i >= j in a diagonal block: not earlier
    for j0 in range(1, m, width):  # member 0 has no earlier member
        j1 = min(m, j0 + width)
        sim = x[:j1] @ x[j0:j1].T  # (earlier candidates, columns)
        sim[j0:j1][below[:j1 - j0, :j1 - j0]] = -np.inf
        at = sim.argmax(axis=0)
        best[j0:j1] = sim[at, np.arange(j1 - j0)]
        match[j0:j1] = members[at]
