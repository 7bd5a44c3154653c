"""Which arm is better, and whether beyond seed noise.

Per metric and pair of arms (a, b): the per-seed differences d_s = b_s - a_s (same seed: same
initial weights and sequence order; each seed its own draw of each arm's sample, so the luck of
the draw is part of the seed-to-seed noise), a paired t-test on them (df = seeds - 1; scipy's ttest_rel
formula: t = mean(d) / (sd(d) / sqrt(k))), and a paired bootstrap over evaluation items (the same
resampled documents or questions for both arms, on their seed-mean scores): the 95% interval of
the difference and the share of resamples on the wrong side. `better` is the better arm when
p < alpha, else None ("no difference beyond seed noise"). The bootstrap measures benchmark
sampling noise only; the verdict rests on the seed test.
"""

from __future__ import annotations

import math

import numpy as np

LOWER_IS_BETTER = ("bpb",)


def lower_is_better(metric: str) -> bool:
    return metric.split(":")[0] in LOWER_IS_BETTER


def t_pvalue(t: float, df: int) -> float:
    """Two-sided p of Student's t (the regularized incomplete beta, by scipy when present)."""
    try:
        from scipy.special import betainc

        return float(betainc(df / 2, 0.5, df / (df + t * t)))
    except ImportError:
        return _betainc(df / 2, 0.5, df / (df + t * t))


def _betainc(a: float, b: float, x: float) -> float:
    """I_x(a, b) by its continued fraction (Numerical Recipes' betacf), for t_pvalue without scipy."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x > (a + 1) / (a + b + 2):
        return 1.0 - _betainc(b, a, 1 - x)
    c, d, f = 1.0, 1.0 - (a + b) * x / (a + 1), 0.0
    d = 1 / (d if abs(d) > 1e-300 else 1e-300)
    f = d
    for m in range(1, 300):
        for num in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 + num * d
            d = 1 / (d if abs(d) > 1e-300 else 1e-300)
            c = 1 + num / c
            c = c if abs(c) > 1e-300 else 1e-300
            f *= c * d
    return front * f / a


def paired_test(a: list[float], b: list[float]) -> tuple[float, float | None, float | None]:
    """(mean of b - a, t, two-sided p) over paired seeds; p None with fewer than 2 seeds."""
    d = np.asarray(b, np.float64) - np.asarray(a, np.float64)
    diff = float(d.mean())
    k = len(d)
    if k < 2:
        return diff, None, None
    sd = float(d.std(ddof=1))
    if sd == 0.0:
        return diff, (math.inf if diff else 0.0), (0.0 if diff else 1.0)
    t = diff / (sd / math.sqrt(k))
    return diff, t, t_pvalue(t, k - 1)


def bootstrap(score, n_items: int, resamples: int = 2000, seed: int = 0) -> dict:
    """Paired bootstrap over items: `score(idx)` -> the difference b - a on items idx."""
    rng = np.random.default_rng(seed)
    diffs = np.array([score(rng.integers(0, n_items, n_items)) for _ in range(resamples)])
    return {
        "low": float(np.percentile(diffs, 2.5)),
        "high": float(np.percentile(diffs, 97.5)),
        "share_le_0": float((diffs <= 0).mean()),
        "resamples": resamples,
        "items": n_items,
    }


def verdict(a: str, b: str, metric: str, diff: float, p: float | None, alpha: float) -> tuple[str | None, str]:
    """(the better arm or None, a plain sentence)."""
    if p is None:
        return None, f"{a} vs {b} on {metric}: one seed, no test (use --seeds 3 or more)"
    if p >= alpha or diff == 0:
        return None, f"{a} vs {b} on {metric}: no difference beyond seed noise (diff {diff:+.4g}, p = {p:.3g})"
    b_better = (diff < 0) if lower_is_better(metric) else (diff > 0)
    better, worse = (b, a) if b_better else (a, b)
    word = "lower" if lower_is_better(metric) else "higher"
    return better, f"{better} better than {worse} on {metric} by {abs(diff):.4g} ({word}; p = {p:.3g})"
