import unicodedata

import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from curate.errors import InputError
from curate_operators.filters.normalize import NormalizeText


def run(texts, **params):
    op = NormalizeText(NormalizeText.Params(**params))
    batch = pa.RecordBatch.from_pydict({"text": pa.array(texts, pa.string()), "n": list(range(len(texts)))})
    out = op.process(batch)
    assert out.column("n").to_pylist() == list(range(len(texts)))  # other columns untouched
    return out.column("text").to_pylist()


def test_nfc_composes_and_nfkc_folds_compatibility_characters():
    decomposed = "Cafe\u0301 ｆｕｌｌ ﬁne"
    assert run([decomposed]) == ["Café ｆｕｌｌ ﬁne"]
    assert run([decomposed], unicode_form="NFKC") == ["Café full fine"]
    assert run([decomposed], unicode_form=None, whitespace=False) == [decomposed]


def test_whitespace_keeps_line_structure():
    text = "  Title\t\t here  \r\n\r\n\r\n\r\nFirst  line   \nsecond\u00a0\u3000line\t\n\n\n\n\nend   "
    assert run([text]) == ["Title here\n\nFirst line\nsecond line\n\nend"]


def test_blank_lines_made_of_spaces_collapse_too():
    assert run(["a\n  \n \t \n   \nb"]) == ["a\n\nb"]


def test_lowercase_and_control_characters():
    assert run(["ÀB\x00C\x07D\x1b\x7f\x85É\tx\ny"], lowercase=True, remove_control=True) == ["àbcdé x\ny"]
    assert run(["a\x00b"]) == ["a\x00b"]  # removal is opt-in


def test_nulls_and_empty_text():
    assert run([None, "", "   \n\n "]) == [None, "", ""]


def test_a_string_view_column_is_normalized_too():
    """The Arrow kernels have no string_view variant: the column comes back as large_string."""
    out = NormalizeText().process(pa.record_batch({"text": pa.array(["a  b", None], pa.string_view())}))
    assert out.column("text").to_pylist() == ["a b", None] and out.schema.field("text").type == pa.large_string()


def test_requires_and_provides_follow_the_text_column():
    op = NormalizeText(text_column="body")
    assert op.requires == ("body",) and op.provides == ("body",)
    batch = pa.RecordBatch.from_pydict({"body": ["x  y"]})
    assert op.process(batch).column("body").to_pylist() == ["x y"]


def test_a_non_text_column_is_a_clear_error():
    with pytest.raises(InputError, match="must be text"):
        NormalizeText().process(pa.RecordBatch.from_pydict({"text": [1, 2]}))


def test_bad_params_are_rejected():
    with pytest.raises(ValueError):
        NormalizeText.Params(unicode_form="NFX")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(codec="utf-8"), max_size=60), max_size=8))
def test_properties(texts):
    out = run(texts, unicode_form="NFKC", remove_control=True)
    for text in out:
        assert all(c == "\n" or unicodedata.category(c) != "Cc" for c in text)
        assert "  " not in text and "\n\n\n" not in text and " \n" not in text
        assert text == text.strip()
    assert run(out, unicode_form="NFKC", remove_control=True) == out  # idempotent
