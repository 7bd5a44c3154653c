"""Duplicate clusters of dedup steps, from their trace details, on the small run and on the
detail formats of every dedup operator."""

import json

import plotly.graph_objects as go
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.report import duplicates
from curate.report.scan import Run
from tests.curate.report import stand_in
from tests.curate.report.small_run import DUP, PAIR


def test_clusters_of_exact_dedup(small):
    assert duplicates.dedup_steps(small) == ["03_exact_dedup"]  # not the length filter
    assert duplicates.sizes(small, "03_exact_dedup") == [(2, 1), (3, 1)]
    first, second = duplicates.largest(small, "03_exact_dedup")
    assert (first["size"], first["kept_text"], first["member_text"]) == (3, DUP, DUP)
    assert first["detail"] == f"duplicate of {first['kept_id']}" and first["member_id"] != first["kept_id"]
    assert (second["size"], second["kept_text"]) == (2, PAIR)


@pytest.mark.parametrize("detail", [
    "duplicate of {id}",
    json.dumps({"duplicate_of": "{id}", "jaccard_estimate": 0.91}),
    "contained in {id} (containment 1.0)",
    json.dumps({"container": "{id}", "containment": 1.0}),  # containment_dedup's in earlier runs
    "similarity 0.97 to {id} (cluster 3)"])
def test_every_dedup_detail_format_names_the_cluster(small, tmp_path, detail):
    """The detail formats operators/dedup and operators/prune write (exact, minhash, containment,
    semantic); ids with spaces and colons too."""
    (tmp_path / "trace").mkdir()
    ids = ["x y:1", "x y:1", "z:2"]
    pq.write_table(pa.table({"_id": ["m1", "m2", "m3"], "step": ["s"] * 3, "reason": ["dup"] * 3,
                             "detail": [detail.replace("{id}", i) for i in ids],
                             "row": [{"text": "t"}] * 3}), tmp_path / "trace" / "01_dedup.parquet")
    run = Run.open(tmp_path, stand_in.manifest([{"step": "01_dedup"}]))
    assert duplicates.dedup_steps(run) == ["01_dedup"]
    assert duplicates.sizes(run, "01_dedup") == [(2, 1), (3, 1)]
    assert duplicates.largest(run, "01_dedup")[0]["kept_id"] == "x y:1"


def test_section_shows_the_two_members_side_by_side(small):
    page = duplicates.render(go, small)
    assert 'class="clusters"' in page and page.count(DUP) == 2 and 'id="fig-dup-sizes-0"' in page
    assert "3 rows removed as duplicates" in page


def test_a_trace_of_rows_with_no_columns(tmp_path):
    """A step that removed rows of no public column traces `row` as nulls (curate/trace.py)."""
    (tmp_path / "trace").mkdir()
    pq.write_table(pa.table({"_id": ["m1", "m2"], "step": ["s"] * 2, "reason": ["dup"] * 2,
                             "detail": ["duplicate of k", "duplicate of k"], "row": pa.nulls(2)}),
                   tmp_path / "trace" / "01_dedup.parquet")
    run = Run.open(tmp_path, stand_in.manifest([{"step": "01_dedup"}]))
    assert run.trace_columns == {"01_dedup": {}}
    [cluster] = duplicates.largest(run, "01_dedup")
    assert (cluster["size"], cluster["kept_id"], cluster["member_text"]) == (3, "k", None)
