"""A score column's summary from its values on disk, in pieces, equals numpy's over all of them
in memory (the summary dataset_metrics gave before it spilled), to the last bit."""

from unittest import mock

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curate_operators.score import score_file
from curate_operators.score.score_file import ScoreFile


def in_memory(values: np.ndarray) -> dict:
    """The summary as numpy gives it over every value at once."""
    values = np.asarray(values, np.float64)
    if not len(values):
        return {"count": 0}
    q = np.quantile(values, [0.0, 0.05, 0.25, 0.5, 0.75, 0.95, 1.0])
    counts, edges = np.histogram(values, bins=30)
    return {"count": int(len(values)), "mean": round(float(values.mean()), 6),
            "quantiles": {k: round(float(v), 6) for k, v in zip(("min", "p05", "p25", "p50", "p75", "p95", "max"), q)},
            "histogram": {"edges": [round(float(e), 6) for e in edges], "counts": counts.tolist()}}


def spilled(tmp_path, values: np.ndarray, pieces: int = 3) -> dict:
    f = ScoreFile(tmp_path / "scores.f32")
    f.path.unlink(missing_ok=True)
    for part in np.array_split(values, pieces):
        f.append(part)
    return f.describe()


floats = st.floats(-1e6, 1e6, width=32, allow_subnormal=False)


@settings(max_examples=60, deadline=None)
@given(values=st.lists(floats, min_size=0, max_size=1000), leaf=st.sampled_from([128, 200, 1 << 20]))
@example(values=[], leaf=128)
@example(values=[2.5], leaf=128)  # one value: every quantile is it, the histogram's range widened by 0.5
@example(values=[1.0] * 300, leaf=128)
@example(values=[-3.0, 7.0], leaf=128)
@example(values=[-1.5, -0.25, 0.0, 0.0, 3.0] * 70, leaf=128)  # negatives sort by their flipped bits
@example(values=[21891923968.0, 83273490432.0], leaf=128)  # p95 differs when interpolated from the lower end
def test_summary_from_disk_equals_numpy_in_memory(tmp_path_factory, values, leaf):
    x = np.asarray(values, np.float32)
    with mock.patch.object(score_file, "LEAF", leaf):
        assert spilled(tmp_path_factory.mktemp("s"), x) == in_memory(x)


def test_a_large_column_in_many_leaves_keeps_numpys_mean_and_quantiles(tmp_path):
    """Values of wide magnitudes, where a different summation order changes the mean's last bits."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(200_003) * 10.0 ** rng.uniform(-8, 9, 200_003)).astype(np.float32)
    with mock.patch.object(score_file, "LEAF", 1000):
        got = spilled(tmp_path, x, pieces=7)
        total = score_file.pairwise_sum(lambda s, n: x[s:s + n], 0, len(x), lambda _: None)
    assert got == in_memory(x)
    assert total == np.asarray(x, np.float64).sum()  # bit for bit, not only after rounding


def test_a_npy_file_is_read_past_its_header(tmp_path):
    x = np.linspace(-2, 5, 1001, dtype=np.float32)
    np.save(tmp_path / "a.npy", x)
    assert ScoreFile.of_npy(tmp_path / "a.npy").describe() == in_memory(x)
