import pyarrow as pa
import pytest
from hypothesis import example, given, strategies as st

from curate_operators.filters.fineweb import FineWebQuality, measure

PROSE = ("The committee met on Tuesday to review the budget for the coming year and agreed on most items.\n"
         "Several members asked for more detail on the maintenance costs of the old library building.\n"
         "The chair promised a full report before the next meeting, which is planned for early March.")


def run(texts, **params):
    return FineWebQuality(FineWebQuality.Params(**params)).keep(
        pa.RecordBatch.from_pydict({"text": pa.array(texts, pa.string())}))


def test_prose_is_kept():
    assert run([PROSE]).keep.tolist() == [True]


@pytest.mark.parametrize("text, reason", [
    ("\n".join(["Products and services for every home and garden"] * 1 + [f"item number {i} of the list here now"
                                                                          for i in range(9)]), "fineweb_line_punct_ratio"),
    ("\n".join(["Home.", "Shop.", "Cart.", "Help.", PROSE.split("\n")[0]]), "fineweb_short_line_ratio"),
    (PROSE + "\n" + PROSE.split("\n")[0], "fineweb_dup_line_char_ratio"),
    ("\n".join(["A first item of the list.", "Second item here.", "Third.", "Fourth!", "Fifth one?",
                "The end of the list is here at last, and it is long enough to pass."]), "fineweb_short_line_ratio"),
    ("   \n\n  ", "fineweb_empty"),
])
def test_each_rule_names_itself(text, reason):
    v = run([text])
    assert v.reason.to_pylist() == [reason]


def test_list_ratio_counts_newlines_per_word():
    text = "\n".join(f"Entry {i} is listed here in full." for i in range(10)) + "\n" * 40
    v = run([text], max_short_line_ratio=None)
    assert v.reason.to_pylist() == ["fineweb_list_ratio"]
    assert v.detail[0].as_py().startswith("newline_word_ratio=")


def test_terminal_punctuation_is_sentence_terminal_not_comma():
    # A comma is Unicode Terminal_Punctuation but ends no sentence: datatrove does not count it.
    assert measure("one, two, three,\nfour five six,", 30)[0] == 0.0
    assert measure("Fin。\n終わり！", 30)[0] == 1.0


def test_exclude_zero_keeps_pages_without_any_punctuation():
    text = "\n".join(f"a long line of text number {i} without any stop at all" for i in range(5))
    assert run([text]).reason.to_pylist() == ["fineweb_line_punct_ratio"]
    assert run([text], line_punct_exclude_zero=True).keep.tolist() == [True]


def test_scores_are_added_for_every_row():
    batch, v = FineWebQuality(FineWebQuality.Params(scores=True)).keep(
        pa.RecordBatch.from_pydict({"text": [PROSE, ""]}))
    assert batch.column("quality_fineweb_dup_line_char_ratio").to_pylist() == [0.0, None]
    assert v.keep.tolist() == [True, False]


@given(st.lists(st.sampled_from(["Short.", "A longer line that ends with a full stop.", "no stop here", "", "  "]),
                max_size=12))
@example([])
def test_ratios_are_fractions(lines):
    ratios = measure("\n".join(lines), 30)
    if ratios is None:
        assert not any(line.strip() for line in lines)
    else:
        assert all(0 <= r <= 1 for r in ratios[:3])
