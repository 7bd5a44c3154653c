"""decontaminate's rules, normalisation, modes, trace details, report and errors, on small texts."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.errors import InputError, RecipeError
from curate_operators.decon import decontaminate
from curate_operators.decon.decontaminate import Decontaminate
from curate_operators.decon.text import word_spans
from tests.operators.decon.helpers import run

ITEM = "The quick brown fox jumps over the lazy dog while the cat sleeps on the warm mat"  # 17 words
FILLER = "Lorem ipsum dolor sit amet. " * 12


def test_whitespace_case_punctuation_and_nfkc_do_not_hide_a_match():
    variants = [
        "THE QUICK BROWN FOX jumps over the lazy dog while the cat sleeps on the warm mat",
        "the quick\n    brown fox, jumps -- over the lazy dog; while the cat sleeps on the warm mat!",
        "The\tquick brown fox jumps over the lazy dog while the cat sleeps on the ｗａｒｍ mat",  # full-width
        "    The quick brown fox jumps over the lazy\n\n  dog while the cat sleeps on the warm mat",
    ]
    rows, _, _ = run([ITEM], [f"{FILLER}{v} {FILLER}" for v in variants])
    assert rows == [None] * len(variants)


def test_sharing_fewer_than_n_words_is_not_contamination():
    words = ITEM.split()
    docs = [" ".join(words[:12]), f"{FILLER} {' '.join(words[3:15])} {FILLER}", " ".join(words[5:])]
    rows, _, _ = run([ITEM], docs)
    assert all(r is not None for r in rows)


def test_llama_fraction_counts_the_items_ngrams_found():
    # 17 words: 5 distinct 13-grams; the document holds the first 14 words, so 2 of them (0.4)
    doc = " ".join(ITEM.split()[:14])
    assert run([ITEM], [doc], min_overlap=0.4)[0] == [None]
    assert run([ITEM], [doc], min_overlap=0.41)[0][0] is not None
    assert run([ITEM], [doc])[0] == [None]  # GPT-3: any one


def test_short_items_match_whole_only():
    rows, details, _ = run(["Paris, France"], ["I was in paris france", "paris is in France", "PARIS-FRANCE!"])
    assert [r is None for r in rows] == [True, False, True]
    assert details[0] == "b item i0: 1 of 1 13-grams, first at char 9"


def test_trace_detail_names_benchmark_item_count_offset_and_other_items():
    doc = "é" * 5 + " " + ITEM + " and " + "Paris, France"
    rows, details, _ = run(["nothing here matches at all ok", ITEM, "paris france"], [doc])
    assert rows == [None]
    assert details[0] == "b item i1: 5 of 5 13-grams, first at char 6 (+1 more item)"


def test_redact_cuts_spans_and_margin_in_characters_of_unicode_text():
    head = "Ünïcödé façade — naïve café. " * 3
    tail = " Straße über 😀 smörgåsbord."
    doc = head + ITEM + tail
    rows, _, _ = run([ITEM], [doc], mode="redact", margin=3, min_piece=0)
    start = len(head)
    assert rows[0]["text"] == head[:start - 3] + "\n" + tail[3:]
    assert rows[0]["contamination_redactions"] == 1


def test_redact_drops_documents_cut_into_too_many_pieces_or_to_nothing():
    doc = " gap ".join(["Paris France"] * 4)
    rows, details, _ = run(["Paris France"], [doc, "paris france", "keep me"], mode="redact", margin=0,
                           min_piece=0, max_pieces=2)
    assert rows[0] is None and details[0].endswith("cut into 3 pieces > max_pieces 2")
    assert rows[1] is None and details[1].endswith("nothing left after redaction")
    assert rows[2]["text"] == "keep me" and rows[2]["contamination_redactions"] == 0


def test_redact_discards_short_pieces():
    doc = "short. " + ITEM + " " + "long enough piece " * 3
    rows, _, _ = run([ITEM], [doc], mode="redact", margin=0, min_piece=20)
    assert rows[0]["text"] == " " + "long enough piece " * 3


def test_word_spans_cover_whole_characters_that_normalise_to_several():
    text = "a ﬁnance ｂｅｔａ ǅx"  # ligature fi (1 -> 2), full-width (same length), Dž (1 -> 2)
    starts, ends = word_spans(text)
    assert [text[a:b] for a, b in zip(starts, ends)] == ["a", "ﬁnance", "ｂｅｔａ", "ǅx"]


def test_sft_columns_are_joined_so_an_item_straddles_instruction_and_response():
    op_params = dict(columns=["instruction", "response"])
    words = ITEM.split()
    from tests.operators.decon import helpers
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as tmp:
        bench = Path(tmp) / "b.jsonl"
        bench.write_text(json.dumps({"q": " ".join(words[:8]), "a": " ".join(words[8:])}) + "\n")
        op = Decontaminate(Decontaminate.Params(benchmarks=[{"name": "b", "path": str(bench), "columns": ["q", "a"]}],
                                                **op_params))
        batch = pa.RecordBatch.from_pydict({"instruction": [" ".join(words[:10]), "x"],
                                            "response": [" ".join(words[10:]), " ".join(words[2:9])],
                                            "_id": ["0", "1"], "_ord": [0, 1]})
        state = op.fit(iter([batch]), Path(tmp) / "w")
        verdict = op.apply(batch, state)
    assert list(verdict.keep) == [False, True]
    assert verdict.detail[0] == "b item 0: 5 of 5 13-grams, first at char 0"
    assert op.requires == ("instruction", "response")


def test_report_gives_items_found_documents_and_most_matched_items():
    other = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
    docs = [ITEM, ITEM + " " + other, other, "clean text", "Paris France"]
    _, _, state = run([ITEM, other, "never seen in the corpus at all", "Paris France"], docs)
    row = state.summary()["benchmarks"][0]
    assert row == {"benchmark": "b", "items": 4, "items_found": 3, "documents": 4, "ngrams": 5 + 2 + 1 + 1,
                   "top_items": "i0 (2), i1 (2), i3 (1)"}
    assert state.summary()["documents_contaminated"] == 4


def test_mark_adds_columns_and_removes_nothing():
    rows, _, _ = run([ITEM], [ITEM, "clean"], mode="mark")
    assert rows[0]["contamination_benchmark"] == "b" and rows[0]["contamination_item"] == "i0"
    assert rows[0]["contamination_ngrams"] == 5 and rows[0]["contamination_offset"] == 0
    assert rows[1]["contamination_benchmark"] is None and rows[1]["contamination_ngrams"] is None


def test_bad_benchmarks_are_named(tmp_path):
    bench = tmp_path / "b.jsonl"
    bench.write_text(json.dumps({"question": "q"}) + "\n")
    op = Decontaminate(Decontaminate.Params(benchmarks=[{"name": "mmlu", "path": str(bench), "columns": ["question", "answer"]}]))
    with pytest.raises(InputError, match=r"benchmarks\[0\] \(mmlu\): .*b.jsonl has no column 'answer'"):
        op.preflight()
    twice = [{"name": "x", "path": str(bench), "columns": ["question"]}] * 2
    with pytest.raises(RecipeError, match="benchmark names must differ"):
        Decontaminate(Decontaminate.Params(benchmarks=twice)).preflight()
    missing = Decontaminate(Decontaminate.Params(benchmarks=[{"name": "x", "path": str(tmp_path / "no.jsonl")}]))
    with pytest.raises(InputError, match="no.jsonl"):
        missing.preflight()
    nested = tmp_path / "n.parquet"
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"question": [["a", "b"]]}), nested)
    with pytest.raises(InputError, match="column 'question' is list<element: string>, not text"):
        run_fit(nested)


def run_fit(path):
    import tempfile
    from pathlib import Path
    op = Decontaminate(Decontaminate.Params(benchmarks=[{"name": "x", "path": str(path), "columns": ["question"]}]))
    with tempfile.TemporaryDirectory() as tmp:
        op.fit(iter([]), Path(tmp))


def test_word_spans_cover_the_whole_text_when_pieces_normalise_differently():
    text = "ΟΔΟΣa ΟΔΟΣ b"  # a final sigma before an ASCII letter lower-cases to σ in context, ς alone
    starts, ends = word_spans(text)
    assert list(starts) == [0, 0, 0] and list(ends) == [len(text)] * 3


def test_the_scan_is_written_as_it_comes_in_row_groups_whatever_the_batches(tmp_path, monkeypatch):
    """Pieces are written as they come back (no list of them held): the same decisions and report
    from a batch per row as from one batch, the file in row groups of (here) 2 rows."""
    monkeypatch.setattr(decontaminate, "ROW_GROUP_ROWS", 2)
    other = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
    docs = [ITEM, "clean", ITEM + " " + other, other, "clean too", "Paris France", ITEM]
    (tmp_path / "bench.jsonl").write_text("".join(json.dumps({"id": f"i{k}", "q": t}) + "\n"
                                                  for k, t in enumerate([ITEM, other, "Paris France"])))
    op = Decontaminate(Decontaminate.Params(benchmarks=[{"name": "b", "path": str(tmp_path / "bench.jsonl"),
                                                          "columns": ["q"], "id_column": "id"}]))
    table = pa.table({"text": docs, "_id": [str(i) for i in range(len(docs))], "_ord": list(range(len(docs)))})
    one = op.fit(iter(table.to_batches()), tmp_path / "one")
    each = op.fit(iter(table.to_batches(max_chunksize=1)), tmp_path / "each")
    assert pq.read_table(each.decisions) == pq.read_table(one.decisions)
    assert pq.read_table(one.decisions).column("_ord").to_pylist() == [0, 2, 3, 5, 6]
    assert each.summary() == one.summary()
    assert pq.ParquetFile(each.decisions).num_row_groups == 3


def test_fit_batches_out_of_order_are_a_bug_not_a_wrong_file(tmp_path):
    (tmp_path / "bench.jsonl").write_text(json.dumps({"id": "i0", "q": ITEM}) + "\n")
    op = Decontaminate(Decontaminate.Params(benchmarks=[{"name": "b", "path": str(tmp_path / "bench.jsonl"),
                                                          "columns": ["q"], "id_column": "id"}]))
    table = pa.table({"text": [ITEM, ITEM], "_id": ["0", "1"], "_ord": [0, 1]})
    with pytest.raises(RuntimeError, match="_ord order"):
        op.fit(iter(table.to_batches(max_chunksize=1)[::-1]), tmp_path / "w")
