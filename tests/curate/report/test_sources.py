"""Rows kept and removed per input file, hive partition and chosen column, on the small run."""

import plotly.graph_objects as go
import pytest

from curate.errors import CurateError
from curate.report import sources
from tests.curate.report.small_run import EN, FR


def by(run, kind, **options):
    g = next(g for g in sources.groupings(run, **options) if g.kind == kind)
    return {r[0]: r[1:4] for r in sources.rows(run, g)}


def test_by_input_file_from_the_ids_curate_derives(small):
    # a.jsonl: DUP, PAIR and the unique row kept; "tiny" and three copies removed
    assert by(small, "file") == {"lang=en/a.jsonl": [7, 3, 4], "lang=fr/b.jsonl": [3, 2, 1]}


def test_input_files_are_named_for_the_sources_shown_only(small, monkeypatch):
    """The table names its TOP sources: the map from `_id` prefixes to files holds those, not every
    tail of every input file's path (1.4 MB at 1,000 files), and names them as before."""
    monkeypatch.setattr(sources, "TOP", 1)
    asked: list[set] = []
    names = sources.file_names

    def recording(manifest, prefixes):
        asked.append(set(prefixes))
        return names(manifest, prefixes)

    monkeypatch.setattr(sources, "file_names", recording)
    assert by(small, "file") == {"lang=en/a.jsonl": [7, 3, 4], sources.OTHERS: [3, 2, 1]}
    assert len(asked) == 1 and len(asked[0]) == 2  # a.jsonl's prefix and OTHERS
    (named,) = [k for k in asked[0] if k != sources.OTHERS]
    assert names(small.manifest, asked[0]) == {named: "lang=en/a.jsonl"}


def test_by_hive_partition(small):
    assert by(small, "partition") == {"lang=en": [7, 3, 4], "lang=fr": [3, 2, 1]}


def test_by_a_column_and_by_a_urls_domain(small):
    assert by(small, "domain", by_domain="url") == {"a.example.com": [4, 3, 1], "b.example.org": [3, 0, 3],
                                                   "c.example.fr": [3, 2, 1]}
    assert sum(r[0] for r in by(small, "column", by="url").values()) == len(EN) + len(FR)


def test_the_table_is_bounded_the_rest_summed(small, monkeypatch):
    monkeypatch.setattr(sources, "TOP", 1)
    rows = by(small, "column", by="url")
    assert len(rows) == 2 and rows[sources.OTHERS][0] == len(EN) + len(FR) - 1


def test_ids_of_the_users_own_are_looked_up_in_the_input_files(small, monkeypatch):
    small.manifest.recipe["input"]["id_column"] = "url"
    assert [g.kind for g in sources.groupings(small)] == ["file_by_id", "partition"]
    monkeypatch.setattr(sources, "ID_SCAN_BYTES", 0)  # inputs too large to read again: no file breakdown
    assert [g.kind for g in sources.groupings(small)] == ["partition"]


def test_a_column_no_row_has_is_a_clear_error(small):
    with pytest.raises(CurateError, match="--by: no column 'site'.*columns are: .*url"):
        sources.render(go, small, by="site")


def test_section_renders_a_table_and_a_figure(small):
    html = sources.render(go, small, by_domain="url")
    assert html.count('class="sources"') == 3 and 'id="fig-sources-0"' in html and "c.example.fr" in html
