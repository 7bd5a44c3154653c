"""Near-dedup in the report (issue 46, part 5): its largest clusters are exact copies
(containment 1.0), so the section also draws the distribution of the score over the removed rows
and shows the pairs nearest the threshold."""

import json

import plotly.graph_objects as go
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.report import duplicates
from curate.report.scan import Run
from tests.curate.report import stand_in

SCORES = [1.0] * 6 + [0.93, 0.87, 0.81, 0.8]


@pytest.mark.parametrize("form", [
    "contained in {id} (containment {s})",
    json.dumps({"duplicate_of": "{id}", "jaccard_estimate": "{s}"}).replace('"{s}"', "{s}"),
    "similarity {s} to {id} (cluster 3)"])
def test_near_dedup_shows_scores_near_the_threshold(tmp_path, form):
    (tmp_path / "trace").mkdir()
    details = [form.replace("{id}", "k0" if i < 6 else f"k{i}").replace("{s}", str(s)) for i, s in enumerate(SCORES)]
    pq.write_table(pa.table({"_id": [f"m{i}" for i in range(len(SCORES))], "step": ["s"] * len(SCORES),
                             "reason": ["dup"] * len(SCORES), "detail": details,
                             "row": [{"text": f"text of m{i}"} for i in range(len(SCORES))]}),
                   tmp_path / "trace" / "01_dedup.parquet")
    run = Run.open(tmp_path, stand_in.manifest([{"step": "01_dedup"}]))
    bins = duplicates.score_bins(run, "01_dedup")
    assert sum(c for _, c in bins) == len(SCORES) and len(bins) == duplicates.BINS, bins
    assert bins[:2] == [(0.8, 1), (0.81, 1)] and bins[-1] == (0.99, 6), bins  # 0.01 wide, from the lowest
    near = duplicates.nearest_threshold(run, "01_dedup")
    assert [r["score"] for r in near] == [0.8, 0.81, 0.87, 0.93, 1.0]
    assert (near[0]["member_id"], near[0]["kept_id"], near[0]["member_text"]) == ("m9", "k9", "text of m9")
    page = duplicates.render(go, run)
    assert 'id="fig-dup-scores-0"' in page and "nearest the threshold" in page and "text of m9" in page


def test_exact_dedup_has_no_scores(tmp_path):
    (tmp_path / "trace").mkdir()
    pq.write_table(pa.table({"_id": ["m1", "m2"], "step": ["s"] * 2, "reason": ["dup"] * 2,
                             "detail": ["duplicate of k", "duplicate of k"], "row": [{"text": "t"}] * 2}),
                   tmp_path / "trace" / "01_dedup.parquet")
    run = Run.open(tmp_path, stand_in.manifest([{"step": "01_dedup"}]))
    assert duplicates.score_bins(run, "01_dedup") == []
    assert "nearest the threshold" not in duplicates.render(go, run)
