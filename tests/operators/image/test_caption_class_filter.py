"""caption_class_filter keeps exactly the English captions of which some `text.split()` word,
lower-cased, is a one-word class name of the user's list (DataComp's text-based rule with classes
given by name, transcribed here)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import example, given, settings, strategies as st

from curate.errors import CurateError
from curate_operators.image.caption_class_filter import CaptionClassFilter, CaptionClassFilterParams

CLASSES = "dog, domestic dog\nCat\ngolden retriever\n\nbird ,  Vogel\n"
NAMES = {"dog", "cat", "bird", "vogel"}  # "domestic dog", "golden retriever": several words, never one word


def reference_keep(caption, language):
    return caption is not None and language == "en" and any(w.lower() in NAMES for w in caption.split())


@pytest.fixture(scope="module")
def classes(tmp_path_factory):
    path = tmp_path_factory.mktemp("c") / "classes.txt"
    path.write_text(CLASSES)
    return str(path)


words = st.sampled_from(["dog", "DOG", "Dogs", "cat.", "a", "bird", "vogel", "golden", "retriever", "domestic", ""])
spaces = st.sampled_from([" ", "\n", "\t", "\u00a0", "\x1c", "\u2003", "  "])


@settings(deadline=None)
@given(parts=st.lists(st.tuples(words, spaces), max_size=6), language=st.sampled_from(["en", "de", None]))
@example(parts=[("golden", " "), ("retriever", " ")], language="en")  # a two-word class: no one word names it
@example(parts=[("a", "\x1c"), ("dog", " ")], language="en")  # \x1c separates words for str.split()
@example(parts=[("Dogs", " ")], language="en")  # an inflected form matches only when listed
def test_equals_the_reference_rule(classes, parts, language):
    caption = "".join(w + s for w, s in parts)
    op = CaptionClassFilter(CaptionClassFilterParams(classes=classes, language_column="language"), text_column="c")
    v = op.keep(pa.RecordBatch.from_pydict({"c": [caption, None], "language": [language, "en"]}))
    assert v.keep.tolist() == [reference_keep(caption, language), False]
    if not v.keep[0]:
        assert v.reason[0] == ("caption_language" if language != "en" else "caption_no_class")


def test_without_language_column_only_the_class_rule(classes):
    op = CaptionClassFilter(CaptionClassFilterParams(classes=classes), text_column="c")
    assert op.keep(pa.RecordBatch.from_pydict({"c": ["ein Vogel", "a tree"]})).keep.tolist() == [True, False]


def test_a_list_without_one_word_names_is_an_error(tmp_path):
    (tmp_path / "c.txt").write_text("golden retriever\n\n")
    op = CaptionClassFilter(CaptionClassFilterParams(classes=str(tmp_path / "c.txt")), text_column="c")
    with pytest.raises(CurateError, match="c.txt: no one-word class name"):
        op.keep(pa.RecordBatch.from_pydict({"c": ["a dog"]}))
