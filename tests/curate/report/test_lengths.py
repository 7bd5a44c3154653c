"""Lengths, bytes and tokens of the input vs the output, on the small run (small_run.py)."""

import math

import plotly.graph_objects as go
from hypothesis import example, given, strategies as st

from curate.report import lengths
from tests.curate.report.small_run import EN, FR

ALL = [r["text"] for r in EN + FR]
KEPT = list(dict.fromkeys(t for t in ALL if len(t) >= 20))  # first copies of the long rows


def test_characters_and_tokens_in_and_out(small):
    chars = lengths.count(small, "text", 'length("text")', text_bytes=True)
    assert chars["output"].total == sum(map(len, KEPT))
    assert chars["output"].total + chars["removed"].total == sum(map(len, ALL))
    assert chars["output"].bytes == sum(len(t.encode()) for t in KEPT)
    tokens = lengths.count(small, "token_count", '"token_count"')  # token_count ran first: every row counted
    assert tokens["output"].total == sum(len(t.split()) for t in KEPT)
    assert tokens["output"].total + tokens["removed"].total == sum(len(t.split()) for t in ALL)


def test_histograms_count_every_row_once(small):
    counts = lengths.count(small, "text", 'length("text")')
    assert sum(counts["output"].bins.values()) == len(KEPT)
    assert sum(counts["removed"].bins.values()) == len(ALL) - len(KEPT)
    b = max(counts["output"].bins)
    low, high = lengths.bin_edges(b)
    assert any(low <= len(t) < high for t in KEPT)


@given(st.integers(1, 10**12))
@example(1)
@example(2)
@example(2**40)
def test_a_length_lies_in_its_bin(n):
    b = math.floor(math.log2(n) * lengths.BINS_PER_OCTAVE)  # the bin DuckDB computes (lengths._bin)
    low, high = lengths.bin_edges(b)
    assert low <= n * (1 + 1e-12) and n < high * (1 + 1e-12)


def test_section_draws_characters_and_tokens_and_the_totals(small):
    html = lengths.render(go, small)
    assert 'id="fig-lengths-chars"' in html and 'id="fig-lengths-tokens-1"' in html
    assert "tokens (token_count)" in html and f"<td class=\"num\">{sum(map(len, KEPT)):,}</td>" in html


def test_a_single_length_draws_no_histogram(small, monkeypatch):
    one_bin = {"output": lengths.Side({40: 3}, 120), "removed": lengths.Side({40: 1}, 40)}
    monkeypatch.setattr(lengths, "count", lambda run, column, expr, text_bytes: one_bin)
    html = lengths.render(go, small)
    assert "fig-lengths" not in html and "has one length bin" in html


def test_a_text_column_that_is_not_text_draws_nothing(small):
    small.manifest.recipe["input"]["text_column"] = "token_count"  # an integer column
    assert "is not a string column" in lengths.render(go, small)
