"""Step summaries as tables (and SemDeDup's kept_by_eps as a curve), not JSON."""

import plotly.graph_objects as go
from hypothesis import example, given
from hypothesis import strategies as st

from curate.report import summaries

SEMDEDUP = {"eps": 0.1, "order": "centroid", "kept_by_eps": {"0.05": 900, "0.1": 800, "0.2": 500},
            "kept_fraction_by_eps": {"0.05": 0.9, "0.1": 0.8, "0.2": 0.5},
            "cluster_size": {"min": 1, "median": 10.0, "max": 40}}


def test_kept_by_eps_is_a_table_and_a_curve_with_the_chosen_eps_marked():
    page = summaries.render_summary(go, "03_semantic_dedup", SEMDEDUP, 0)
    assert "<th>eps</th><th>kept_by_eps</th><th>kept_fraction_by_eps</th>" in page
    assert '<td class="num">0.2</td><td class="num">500</td><td class="num">0.5</td>' in page
    assert 'id="fig-curve-0"' in page and "eps = 0.1" in page
    assert "cluster_size.median" in page and "{" not in page.split("<script")[0]  # no JSON


def test_records_are_one_table_a_row_each():
    summary = {"method": "threshold", "input": {"rows": 335, "Q": {"q": 1.0}},
               "selection": {"rows": 168, "Q": {"q": 0.9}}}
    page = summaries.render_summary(go, "07_qdc_select", summary, 0)
    assert "<th></th><th>rows</th><th>Q.q</th>" in page and "<td class=\"\">selection</td>" in page


def test_histograms_and_cluster_lists_are_left_to_their_sections():
    flat = summaries.flatten({"scores": {"count": 3, "histogram": {"edges": [0, 1]}},
                              "clusters": [{"cluster": 0, "rows": 4}], "ids": list(range(20))})
    assert flat == {"scores.count": 3, "ids": "20 values"}


@given(st.dictionaries(st.sampled_from(["0.05", "0.1", "0.2", "1", "x"]), st.integers(0, 9)))
@example({"0.1": 3})
@example({"0.1": 3, "x": 2})
def test_a_curve_needs_two_numeric_points(v):
    assert summaries.is_curve(v) == (len(v) >= 2 and "x" not in v)
