"""Score histograms counted by DuckDB; constant or empty ones left out."""

import numpy as np
import plotly.graph_objects as go
import pyarrow as pa
import pyarrow.parquet as pq

from curate.report import scores
from curate.report.scan import Run
from tests.curate.report import stand_in


def run_with(tmp_path, manifest=None, **columns) -> Run:
    (tmp_path / "data").mkdir()
    half = len(next(iter(columns.values()))) // 2
    for i, part in enumerate((slice(0, half), slice(half, None))):  # two files: counts add up across them
        pq.write_table(pa.table({k: v[part] for k, v in columns.items()}), tmp_path / "data" / f"part-{i}.parquet")
    return Run.open(tmp_path, manifest or stand_in.manifest())


def test_counts_per_bin_over_every_file(tmp_path):
    values = np.array([0.0, 0.1, 0.5, 0.5, 1.0, np.nan, 0.9, 0.2])
    run = run_with(tmp_path, quality_x=values, quality_same=np.ones(8), text=["t"] * 8)
    assert scores.columns(run) == ["quality_x", "quality_same"]
    counts, edges = scores.output_histogram(run, "quality_x", None)
    expected, _ = np.histogram(values[np.isfinite(values)], bins=scores.BINS, range=(0, 1))
    assert counts.tolist() == expected.tolist() and edges[0] == 0 and edges[-1] == 1
    counts, edges = scores.output_histogram(run, "quality_x", np.linspace(-1, 1, 5))  # the input's bins
    assert counts.tolist() == [0, 0, 3, 4] and edges.tolist() == [-1, -0.5, 0, 0.5, 1]


def test_constant_and_empty_scores_are_left_out(tmp_path):
    run = run_with(tmp_path, quality_x=np.array([0.0, 1.0, 0.5, 0.2]), quality_same=np.ones(4),
                   quality_none=np.full(4, np.nan))
    page = scores.render(go, run)
    assert "quality_x" in page and "quality_same" not in page and "quality_none" not in page
    assert scores.output_histogram(run, "quality_same", None) is None
    assert scores.output_histogram(run, "quality_none", None) is None
