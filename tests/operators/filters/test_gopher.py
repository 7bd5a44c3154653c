import math
import re

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import example, given, settings, strategies as st

from curate.errors import InputError
from tests.operators.filters.gopher_reference import reference_metrics
from curate_operators.filters import gopher_metrics as gm
from curate_operators.filters.gopher import GopherQuality

GOOD = ("The old lighthouse on the northern cape has guided fishing boats home for more than a century. "
        "Its keeper, a retired schoolteacher named Marta, climbs the spiral stairs every evening to check the lamp "
        "and record the weather in a leather notebook. Visitors often ask whether the job feels lonely, and she "
        "laughs, pointing to the gulls, the seals that sunbathe on the rocks below, and the radio that keeps her "
        "company through long winter storms. Last spring the town council voted to restore the tower with money "
        "raised at the summer fair. Work begins in May, and the lamp will shine again by autumn.")
SENTENCES = [s if s.endswith(".") else s + "." for s in GOOD.split(". ")]
TWO_LETTER = [c + v for c in "bcdfghjklmnprstvwyz" for v in "aeiou"]
DISTINCT = [c + v + c2 for c in "bdfgklmnprst" for v in "aeiou" for c2 in "xz"]  # 120 made-up words
NO_NGRAM_RULES = dict(max_top_ngram_char_frac={}, max_dup_ngram_char_frac={})


def verdict(texts, **params):
    op = GopherQuality(GopherQuality.Params(**params))
    return op, op.keep(pa.RecordBatch.from_pydict({"text": pa.array(texts, pa.string())}))


def check(text, metric, detail, **params):
    """`text` fails `metric` with `detail`, and no other rule (with and without scores)."""
    _, v = verdict([text], **params)
    assert not v.keep[0]
    assert (v.reason[0].as_py(), v.detail[0].as_py()) == (f"gopher_{metric}", detail)
    op, (scored, v2) = verdict([text], scores=True, **params)
    assert v2.detail[0].as_py() == detail
    failing = [r.metric for r in op.rules if r.fails(np.array([scored.column(f"quality_gopher_{r.metric}")[0].as_py()]))[0]]
    assert failing == [metric]


def interleave(phrase: str, times: int) -> str:
    return " ".join(f"{phrase} {w}" for w in DISTINCT[:times]) + " the end of it."


def test_a_good_paragraph_passes_every_rule():
    _, v = verdict([GOOD])
    assert v.keep.tolist() == [True]


def test_word_count():
    check(SENTENCES[1], "word_count", "word_count=25 < 50", max_top_ngram_char_frac={})
    check(GOOD, "word_count", "word_count=105 > 80", max_words=80)


def test_mean_word_length():
    short = " ".join(TWO_LETTER[:60]) + " to"  # "be" is among the 60
    check(short, "mean_word_length", "mean_word_length=2 < 3")
    long = " ".join(w + "ationalisation" for w in DISTINCT[:60]) + " the end of it"
    check(long, "mean_word_length", "mean_word_length=16.09 > 10")


def test_hash_and_ellipsis_word_ratio():
    check(GOOD + " " + " ".join("#" + w for w in DISTINCT[:12]), "hash_word_ratio", "hash_word_ratio=0.1026 > 0.1")
    words = GOOD.split()
    for i in range(96, 0, -8):  # 12 ellipses inside the line, none at its end
        words.insert(i, "so...")
    check(" ".join(words), "ellipsis_word_ratio", "ellipsis_word_ratio=0.1026 > 0.1")


def test_bullet_and_ellipsis_lines():
    words = GOOD.split()
    bullets = "\n".join("- " + " ".join(words[i:i + 10]) for i in range(0, 93, 10))
    check(bullets, "bullet_line_frac", "bullet_line_frac=1 > 0.9")
    check("\n".join(SENTENCES[:2] + [SENTENCES[2][:-1] + "...", SENTENCES[3][:-1] + "…", SENTENCES[4]]),
          "ellipsis_line_frac", "ellipsis_line_frac=0.4 > 0.3")


def test_alpha_word_frac():
    check(GOOD + " " + " ".join(str(1000 + i) for i in range(27)), "alpha_word_frac", "alpha_word_frac=0.7955 < 0.8")


def test_stop_words_are_whole_words_in_any_case():
    text = ("Our small village sits beside a quiet river where herons hunt at dawn. Farmers bring apples, pears, "
            "cheese, honey, bread, eggs, flowers, jam, cider, wool, candles, soap, baskets, pottery, paintings, "
            "Theodore's famous pies, together every Saturday morning. Children play near fountains while "
            "musicians perform old songs under tall chestnut trees. Everyone agrees: market day feels like "
            "a festival, even when rain falls.")
    check(text, "stop_words", "stop_words=0 < 2")
    check(text.replace("Everyone", "WITH everyone"), "stop_words", "stop_words=1 < 2")
    custom = GopherQuality(GopherQuality.Params(stop_words=("don't", "c++", "a b", "the")))
    assert custom.measure(pa.array(["I don't like c++ or a b, thereafter"]))["stop_words"].tolist() == [3]


def test_duplicate_lines_and_paragraphs():
    read_more = [x for s in SENTENCES for x in (s, "Read more")][:-1]  # 5 lines, 4 copies of one
    check("\n".join(read_more), "dup_line_frac", "dup_line_frac=0.3333 > 0.3")
    paras = ["\n".join(SENTENCES[:3]), "\n".join(SENTENCES[3:]), "Thanks for reading!", "Thanks for reading!",
             "Thanks for reading!"]
    check("\n\n".join(paras), "dup_para_frac", "dup_para_frac=0.4 > 0.3")
    lines = "\n".join([SENTENCES[1], SENTENCES[2], SENTENCES[4], SENTENCES[0], SENTENCES[1]])
    check(lines, "dup_line_char_frac", "dup_line_char_frac=0.2302 > 0.2", **NO_NGRAM_RULES)
    long = SENTENCES[1] + "\n" + SENTENCES[3]
    text = "\n\n".join([long, SENTENCES[0], SENTENCES[2], SENTENCES[4], long])
    check(text, "dup_para_char_frac", "dup_para_char_frac=0.2889 > 0.2", max_dup_line_char_frac=None,
          **NO_NGRAM_RULES)


def test_top_ngram_char_frac():
    check(interleave("big deal", 20), "top_2gram_char_frac", "top_2gram_char_frac=0.6635 > 0.2")
    check(interleave("big deal today", 12), "top_3gram_char_frac", "top_3gram_char_frac=0.7539 > 0.18",
          max_top_ngram_char_frac={3: 0.18}, max_dup_ngram_char_frac={})
    check(interleave("a big deal today", 12), "top_4gram_char_frac", "top_4gram_char_frac=0.7685 > 0.16",
          max_top_ngram_char_frac={4: 0.16}, max_dup_ngram_char_frac={})


@pytest.mark.parametrize("n", range(5, 11))
def test_duplicate_ngram_char_frac_covers_every_occurrence(n):
    phrase = " ".join(DISTINCT[-n:])  # n words of 3 characters
    base = SENTENCES[0] + " " + SENTENCES[1]
    text = base + " " + " ".join(f"{phrase} {w}" for w in DISTINCT[:3])
    ref = reference_metrics(text)[f"dup_{n}gram_char_frac"]
    # The paper's "characters within duplicated n-grams": all 3 copies, not only the 2 repeats.
    assert ref == pytest.approx(3 * 3 * n / (sum(map(len, base.split())) + 3 * 3 * (n + 1)))
    bound = {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10}[n]
    check(text, f"dup_{n}gram_char_frac", f"dup_{n}gram_char_frac={ref:.4g} > {bound:g}",
          min_words=20, max_top_ngram_char_frac={}, max_dup_ngram_char_frac={n: bound})


def test_first_failing_rule_wins_and_empty_or_null_text_is_removed():
    _, v = verdict(["", None, "   \n\n", "#" * 10])
    assert not v.keep.any()
    # no text to judge is its own reason (issue 46), not a rule's ("word_count=0 < 50")
    assert v.reason.to_pylist() == ["no_text"] * 3 + ["gopher_word_count"]
    assert v.detail.to_pylist() == ["the text is blank", "the text is null", "the text is blank", "word_count=1 < 50"]


def test_unicode_text():
    greek = ("Ο φάρος στο βόρειο ακρωτήριο οδηγεί τα αλιευτικά σκάφη για περισσότερο από έναν αιώνα. " * 1)
    greek = " ".join(f"{w}{i}" for i, w in enumerate(greek.split() * 5))  # 65 distinct Greek words
    check(greek, "stop_words", "stop_words=0 < 2")
    # No-break and ideographic spaces separate words as in str.split().
    spaced = GOOD.replace(" ", "\u00a0", 20).replace(" ", "\u3000", 20)
    _, v = verdict([spaced], min_words=105, max_words=105)
    assert v.keep.tolist() == [True]


def test_documents_shorter_than_the_n_grams():
    op = GopherQuality(GopherQuality.Params(scores=True, max_top_ngram_char_frac={7: 0.5}))
    measured = op.measure(pa.array(["a b c d", "x", "", "p q r s t u v w", "a b c d e f g a b c d e f g"]))
    # An n-gram that occurs once is no repetition; a 7-gram twice covers every character.
    assert measured["top_7gram_char_frac"].tolist() == [0, 0, 0, 0, 1.0]
    assert measured["dup_5gram_char_frac"].tolist() == [0, 0, 0, 0, 1.0]
    assert op.measure(pa.array(["a b c d"]))["top_7gram_char_frac"].tolist() == [0]  # whole batch too short


def test_disabled_rules_do_not_run():
    _, v = verdict(["tiny"], min_words=None, min_mean_word_length=None, min_stop_words=None,
                   max_top_ngram_char_frac={}, max_dup_ngram_char_frac={})
    assert v.keep.tolist() == [True]


def test_scores_columns_and_provides():
    op, (out, v) = verdict([GOOD, "tiny"], scores=True)
    assert op.provides == tuple(n for n in out.schema.names if n.startswith("quality_gopher_"))
    assert len(op.provides) == 21 and out.num_rows == 2
    # With scores on, rows removed early are still fully measured.
    assert out.column("quality_gopher_dup_10gram_char_frac").null_count == 0
    assert GopherQuality().provides == ()


def test_a_non_text_column_is_a_clear_error():
    with pytest.raises(InputError, match="must be text"):
        GopherQuality().keep(pa.RecordBatch.from_pydict({"text": [1, 2]}))


def test_other_text_column_and_string_types():
    op = GopherQuality(text_column="body")
    assert op.requires == ("body",)
    for kind in (pa.large_string(), pa.string_view()):
        batch = pa.RecordBatch.from_pydict({"body": pa.array([GOOD, "tiny"], kind)})
        assert op.keep(batch).keep.tolist() == [True, False]


def test_bad_params():
    with pytest.raises(ValueError):
        GopherQuality.Params(max_dup_ngram_char_frac={1: 0.1})
    with pytest.raises(ValueError):
        GopherQuality.Params(min_word=3)


text_strategy = st.lists(
    st.sampled_from(["the", "of", "cat", "sat", "#", "...", "…", "- x", "42", "ünï", "\n", "\n\n", " ", "\t",
                     "\u00a0", "a" * 12, "• b"]),
    max_size=160,
).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(st.lists(text_strategy, min_size=1, max_size=12))
def test_bulk_metrics_equal_the_plain_python_definitions(texts):
    measured = GopherQuality(GopherQuality.Params(scores=True)).measure(pa.array(texts))
    for i, text in enumerate(texts):
        for metric, value in reference_metrics(text).items():
            assert math.isclose(measured[metric][i], value, rel_tol=1e-9, abs_tol=1e-12), (metric, text)


@settings(max_examples=40, deadline=None)
@given(st.lists(text_strategy, min_size=2, max_size=12), st.data())
def test_batch_splitting_and_reruns_do_not_change_decisions(texts, data):
    params = dict(min_words=5)  # short texts, so that later rules decide too
    cut = data.draw(st.integers(1, len(texts) - 1))
    _, whole = verdict(texts, **params)
    parts = [verdict(texts[:cut], **params)[1], verdict(texts[cut:], **params)[1]]
    assert whole.keep.tolist() == parts[0].keep.tolist() + parts[1].keep.tolist()
    assert whole.reason.to_pylist() == parts[0].reason.to_pylist() + parts[1].reason.to_pylist()
    assert whole.detail.to_pylist() == parts[0].detail.to_pylist() + parts[1].detail.to_pylist()
    again = verdict(texts, **params)[1]
    assert again.detail.to_pylist() == whole.detail.to_pylist()


# The fast paths of gopher_metrics against the plain statements they stand for.
pieces = st.lists(st.sampled_from(["the", "The", "tHE", "c++", "#tag", "é", "x", "_", "1", "théâtre", "ſ", "K",
                                   " ", ".", "+", "#", "\n", "-", "日本", "²", "_x"]), max_size=12).map("".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(pieces, min_size=1, max_size=8),
       st.sampled_from(["the", "c++", "#tag", "é", "x", "_x", "1", "a b", "²", "théâtre", "k", "s"]))
def test_stop_word_bounds_equal_non_word_characters_or_ends(texts, word):
    plain = rf"(?i)(?:^|\W){re.escape(word)}(?:\W|$)"
    series = pl.Series(texts, dtype=pl.String)
    assert series.str.contains(gm._whole_word(word)).to_list() == series.str.contains(plain).to_list()


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(max_size=6), max_size=20))
@example(["", "1", "é", "日本", "²", "a1", "١٢", "ǅ", "\U0001d400"])
def test_has_letter_equals_a_unicode_letter_search(words):
    series = pl.Series(words, dtype=pl.String)
    assert gm._has_letter(series).tolist() == series.str.contains(r"\p{L}").to_list()
