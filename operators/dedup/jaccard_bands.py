"""Bands and rows for a Jaccard threshold, as datasketch's MinHashLSH (and text-dedup, which
uses it) choose them.

With b bands of r rows, two documents of Jaccard s share a band with probability
P(s) = 1 - (1 - s^r)^b. Pairs below the threshold t that become candidates are false
positives, pairs above it that do not are false negatives; their weighted areas

    error(b, r) = w_fp * integral_0^t P(s) ds + w_fn * integral_t^1 (1 - P(s)) ds

are minimised over every b, r with b * r <= num_perm (datasketch's `_optimal_param`, weights
0.5 each). The integrals are taken by composite Gauss-Legendre quadrature over every (b, r) at
once; P is smooth, so they agree with datasketch's adaptive scipy quadrature to ~1e-12, far
below the gaps between candidates.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

_PIECES, _NODES = 64, 16  # subintervals of each integral, Gauss-Legendre nodes in each


def _grid(lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """Points and weights integrating a smooth function over [lo, hi]."""
    x, w = np.polynomial.legendre.leggauss(_NODES)
    edges = np.linspace(lo, hi, _PIECES + 1)
    half = (edges[1:] - edges[:-1])[:, None] / 2
    points = (edges[:-1, None] + half * (x + 1)).ravel()
    return points, (half * w).ravel()


@lru_cache(maxsize=64)
def optimal_bands(threshold: float, num_perm: int, fp_weight: float = 0.5, fn_weight: float = 0.5) -> tuple[int, int]:
    """(bands, rows) with bands * rows <= num_perm minimising the weighted false positive and
    false negative areas at `threshold`; the first (fewest bands, then fewest rows) on a tie."""
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"threshold must be between 0 and 1, not {threshold}")
    pairs = np.array([(b, r) for b in range(1, num_perm + 1) for r in range(1, num_perm // b + 1)], np.float64)
    b, r = pairs[:, :1], pairs[:, 1:]
    below, wb = _grid(0.0, threshold)
    above, wa = _grid(threshold, 1.0)
    false_pos = (1 - (1 - below ** r) ** b) @ wb
    false_neg = ((1 - above ** r) ** b) @ wa  # 1 - P(s) = (1 - s^r)^b
    error = fp_weight * false_pos + fn_weight * false_neg
    best = int(np.argmin(error))  # first minimum: the order of datasketch's loops
    return int(pairs[best, 0]), int(pairs[best, 1])
