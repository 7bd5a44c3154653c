"""Rows kept beside rows removed, on the small run."""

from curate.report import kept_removed
from tests.curate.report.small_run import DUP, EN, FR


def test_kept_rows_come_from_the_output_and_removed_ones_from_each_step(small, monkeypatch):
    kept = kept_removed.kept(small)
    long_texts = {r["text"] for r in EN + FR if len(r["text"]) >= 20}
    assert kept and len(kept) <= kept_removed.PAIRS and {t for _, t in kept} <= long_texts
    removed = kept_removed.removed(small)
    assert [(r["step"], r["reason"]) for r in removed] == [("02_sql_filter", "too_short"),
                                                          ("03_exact_dedup", "exact_duplicate")]
    assert removed[0]["text"] in ("tiny", "court") and removed[1]["text"] == DUP


def test_every_step_shows_before_one_shows_twice(small, monkeypatch):
    monkeypatch.setattr(kept_removed, "PAIRS", 1)
    assert len(kept_removed.kept(small)) == 1
    assert [r["step"] for r in kept_removed.removed(small)] == ["02_sql_filter"]


def test_section_pairs_them_in_one_table(small):
    page = kept_removed.render(small)
    assert 'class="kept-removed"' in page and "02_sql_filter: too_short" in page and "exact_duplicate" in page
