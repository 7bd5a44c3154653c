"""quality_heuristics and complexity_scores write the measurements they promise, for every row."""

import numpy as np
import pyarrow as pa
import pytest

from curate_operators.filters.gopher import GopherQuality, GopherQualityParams
from curate_operators.score.complexity import Complexity
from curate_operators.score.quality_heuristics import QualityHeuristics

PROSE = ("The river town grew slowly over the centuries, and its people learned to read the water. In spring "
         "the floods came with the melting snow from the northern hills, so the farmers built their houses on "
         "stilts and kept boats tied to the doors. Traders arrived in summer with salt, cloth and news from the "
         "coast, and the children would run to the docks to watch them unload.")
DOCS = [PROSE, "buy buy buy buy now now now", "", None,
        "# title\n- item one\n- item one\n- item two\n\nThe end of the story is near and we go home to the house."]


def test_quality_columns_are_gopher_metrics_and_nothing_is_removed():
    op = QualityHeuristics()
    out = op.process(pa.record_batch({"text": pa.array(DOCS, pa.string())}))
    assert out.num_rows == len(DOCS)
    gopher = GopherQuality(GopherQualityParams(scores=True))
    measured = gopher.measure(pa.array(DOCS, pa.string()))
    for metric in op.params.metrics:
        assert np.allclose(out.column(f"quality_{metric}").to_numpy(), measured[metric], equal_nan=True), metric
    assert set(op.provides) <= set(out.schema.names)


def test_quality_heuristic_is_the_fraction_of_gopher_rules_passed():
    op = QualityHeuristics(QualityHeuristics.Params(ngram_rules=True))
    out = op.process(pa.record_batch({"text": pa.array(DOCS, pa.string())}))
    score = out.column("quality_heuristic").to_numpy()
    verdict = GopherQuality().keep(pa.record_batch({"text": pa.array(DOCS, pa.string())}))
    assert ((score == 1.0) == verdict.keep).all()  # passing every rule is exactly what gopher_quality keeps
    assert ((0 <= score) & (score <= 1)).all()
    assert score[1] < score[0]  # the repetitive spam passes fewer rules than the prose


def test_cheap_default_leaves_the_ngram_rules_out():
    cheap = QualityHeuristics()
    assert not any("gram" in r.metric for r in cheap.rules) and not cheap.gopher.top_ns and not cheap.gopher.dup_ns
    full = QualityHeuristics(QualityHeuristics.Params(ngram_rules=True, metrics=["top_3gram_char_frac"]))
    assert any("gram" in r.metric for r in full.rules) and 3 in full.gopher.top_ns
    out = full.process(pa.record_batch({"text": pa.array(DOCS, pa.string())}))
    assert "quality_top_3gram_char_frac" in out.schema.names and "quality_word_count" not in out.schema.names


def test_unknown_gopher_metric_is_refused():
    with pytest.raises(ValueError, match="unknown Gopher metric"):
        QualityHeuristics.Params(metrics=["word_cont"])


def test_complexity_of_instruction_and_response_columns():
    op = Complexity(Complexity.Params(instruction_column="q", response_column="a"))
    batch = pa.record_batch({"q": ["Add two numbers.", "Why? Explain."], "a": ["a + b", "Because. It is. So."]})
    out = op.process(batch)
    assert out.column("complexity_instruction_words").to_pylist() == [3, 2]
    assert out.column("complexity_response_sentences").to_pylist() == [1, 3]
    assert out.column("complexity_instruction_mean_sentence_length").to_pylist() == [3.0, 1.0]
    assert "complexity_words" not in out.schema.names
    assert set(op.provides) == {n for n in out.schema.names if n.startswith("complexity_")}


def test_complexity_ast_of_python_code_and_null_where_it_does_not_parse():
    op = Complexity(Complexity.Params(code_column="code", metrics=["words"]))
    out = op.process(pa.record_batch({"text": ["a", "b"], "code": ["x = 1", "def (:"]}))
    assert out.column("complexity_ast_nodes").to_pylist()[0] == 5  # Module, Assign, Name, Store, Constant
    assert out.column("complexity_ast_depth").to_pylist() == [4, None]


def test_complexity_tokens_with_a_tokenizer(tiny_gpt2):
    op = Complexity(Complexity.Params(tokenizer=str(tiny_gpt2), metrics=["words"]))
    out = op.process(pa.record_batch({"text": ["the cat sat", ""]}))
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_gpt2)
    assert out.column("complexity_tokens").to_pylist() == [len(tok("the cat sat")["input_ids"]), 0]


def test_non_text_column_is_a_clear_error():
    from curate.errors import InputError

    with pytest.raises(InputError, match="column 'text' must be text"):
        Complexity().process(pa.record_batch({"text": [1, 2]}))
