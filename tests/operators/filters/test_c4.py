import pyarrow as pa
import pytest

from curate.errors import InputError, RecipeError
from curate_operators.filters.c4 import C4Quality

PROSE = [
    "The harbour was quiet in the early morning light.",
    "Fishermen mended their nets along the stone wall.",
    "A baker opened his shop and the smell of bread drifted down the street.",
    "Children walked to school in small groups, laughing.",
    "By noon the market square was full of traders and visitors.",
]


def run(texts, **params):
    op = C4Quality(C4Quality.Params(**params))
    op.setup()
    batch, verdict = op.keep(pa.RecordBatch.from_pydict({"text": pa.array(texts, pa.string())}))
    return batch, verdict


def test_clean_page_kept_and_only_its_clean_lines_survive():
    page = "\n".join(["Home | About | Contact", *PROSE[:3], "Enable javascript to see the map.",
                      "We use cookies to improve this site.", "Read more...", "Ok then.", *PROSE[3:]])
    batch, v = run([page])
    assert v.keep.tolist() == [True]
    assert batch.column("text")[0].as_py() == "\n".join(PROSE)


def test_page_rules_name_their_reason_and_keep_the_original_text_for_the_trace():
    lorem = "\n".join(PROSE + ["Lorem ipsum dolor sit amet, consectetur."])
    curly = "\n".join(PROSE + ["The function returns {x: 1} when called."])
    short = "\n".join(PROSE[:2] + ["Menu", "Login"])
    batch, v = run([lorem, curly, short])
    assert v.keep.tolist() == [False, False, False]
    assert v.reason.to_pylist() == ["c4_lorem_ipsum", "c4_curly_bracket", "c4_too_few_sentences"]
    assert v.detail.to_pylist()[2] == "sentences=2"
    assert batch.column("text").to_pylist() == [lorem, curly, short]


def test_lines_need_terminal_punctuation_and_three_words_and_no_ellipsis():
    lines = ["Two words.", "No stop at the end", "It trails off into nothing...", "This one is fine."]
    batch, v = run(["\n".join(lines)], min_sentences=1)
    assert batch.column("text")[0].as_py() == "This one is fine."


def test_citations_are_removed_and_sentences_counted_within_a_line():
    text = "It rained. Then it snowed[1]. Then hail came. Roads closed. Schools shut[citation needed]."
    batch, v = run([text])
    assert v.keep[0]
    assert batch.column("text")[0].as_py() == "It rained. Then it snowed. Then hail came. Roads closed. Schools shut."
    scored, _ = run([text], scores=True)
    assert scored.column("quality_c4_sentences").to_pylist() == [5]


def test_long_word_drops_its_line():
    batch, v = run(["\n".join(PROSE + ["See " + "x" * 30 + " now please."])], max_word_length=20)
    assert batch.column("text")[0].as_py() == "\n".join(PROSE)


def test_bad_words_list_is_optional_and_matches_whole_words(tmp_path):
    words = tmp_path / "bad.txt"
    words.write_text("mended\n")
    page = "\n".join(PROSE)
    assert run([page])[1].keep.tolist() == [True]
    assert run([page], bad_words=str(words))[1].reason.to_pylist() == ["c4_bad_words"]
    words.write_text("mend\n")  # a substring of a word is not the word
    assert run([page], bad_words=str(words))[1].keep.tolist() == [True]
    with pytest.raises(RecipeError):
        run([page], bad_words=str(tmp_path / "missing.txt"))


def test_without_rewrite_text_the_text_is_untouched():
    page = "\n".join(["Menu"] + PROSE)
    op = C4Quality(C4Quality.Params(rewrite_text=False))
    v = op.keep(pa.RecordBatch.from_pydict({"text": [page]}))
    assert v.keep.tolist() == [True]


def test_null_text_is_removed_not_an_error_and_non_text_is():
    _, v = run([None])
    assert v.reason.to_pylist() == ["c4_too_few_sentences"]
    with pytest.raises(InputError):
        C4Quality().keep(pa.RecordBatch.from_pydict({"text": [1, 2]}))
