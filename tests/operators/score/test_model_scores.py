"""perplexity, IFD, deita_complexity and classifier_score equal the same model run by hand."""

import numpy as np
import pyarrow as pa
import pytest

from curate_operators.score.classifier import ClassifierScore
from curate_operators.score.deita import DeitaComplexity
from curate_operators.score.perplexity import Perplexity

TEXTS = ["the cat sat on the mat", "a dog ran in the park and the cat sat", "explain why", "", "x"]


def reference_nll(model_dir, texts, contexts=None):
    """Mean NLL per scored token, one text at a time (no padding, no batching)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    out = []
    for i, t in enumerate(texts):
        body = tok(t)["input_ids"]
        ctx = [tok.bos_token_id] + (tok(contexts[i])["input_ids"] if contexts else [])
        ids = ctx + body
        if not body:
            out.append(np.nan)
            continue
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0]
        logp = torch.log_softmax(logits[:-1], -1)
        nll = -logp[torch.arange(len(ids) - 1), torch.tensor(ids[1:])]
        out.append(float(nll[len(ctx) - 1:].mean()))
    return np.array(out)


def test_perplexity_equals_exp_of_the_mean_token_nll(tiny_gpt2):
    op = Perplexity(Perplexity.Params(model=str(tiny_gpt2), batch_size=2))
    got = op.process(pa.record_batch({"text": TEXTS}))
    ppl = got.column("quality_perplexity")
    expected = np.exp(reference_nll(tiny_gpt2, TEXTS))
    assert ppl.null_count == 1 and not ppl[3].is_valid  # the empty text: no token to score
    valid = np.isfinite(expected)
    assert np.allclose(np.array(ppl.to_pylist(), dtype=float)[valid], expected[valid], rtol=1e-4)
    op.teardown()


def test_ifd_is_conditional_over_plain_perplexity(tiny_gpt2):
    instructions = ["explain why the sky is blue", "write a python function", "add"]
    responses = ["the sky is blue", "def add(a, b): return a + b", "1 2 3"]
    op = Perplexity(Perplexity.Params(model=str(tiny_gpt2), instruction_column="instruction",
                                      response_column="response", batch_size=8))
    got = op.process(pa.record_batch({"instruction": instructions, "response": responses}))
    given = reference_nll(tiny_gpt2, responses, instructions)
    alone = reference_nll(tiny_gpt2, responses)
    assert np.allclose(got.column("quality_perplexity").to_pylist(), np.exp(given), rtol=1e-4)
    assert np.allclose(got.column("complexity_ifd").to_pylist(), np.exp(given - alone), rtol=1e-4)


def test_perplexity_does_not_depend_on_the_batch_size(tiny_gpt2):
    batch = pa.record_batch({"text": TEXTS * 3})
    one = Perplexity(Perplexity.Params(model=str(tiny_gpt2), batch_size=1)).process(batch)
    many = Perplexity(Perplexity.Params(model=str(tiny_gpt2), batch_size=7, max_batch_tokens=40)).process(batch)
    a = np.array(one.column("quality_perplexity").to_pylist(), dtype=float)
    b = np.array(many.column("quality_perplexity").to_pylist(), dtype=float)
    assert np.allclose(a, b, rtol=1e-4, equal_nan=True)


def test_perplexity_names_a_missing_model(tmp_path):
    from curate.errors import CurateError

    op = Perplexity(Perplexity.Params(model=str(tmp_path / "nowhere")))
    with pytest.raises(CurateError, match="nowhere"):
        op.process(pa.record_batch({"text": ["a"]}))


def test_instruction_and_response_go_together():
    with pytest.raises(ValueError, match="go together"):
        Perplexity.Params(model="m", instruction_column="q")


def test_deita_complexity_is_the_expected_digit_under_the_next_token_distribution(tiny_gpt2):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    op = DeitaComplexity(DeitaComplexity.Params(model=str(tiny_gpt2), batch_size=2))
    queries = ["explain why the sky is blue", "add", "write a python function that adds two numbers"]
    got = np.array(op.process(pa.record_batch({"text": queries})).column("complexity_deita").to_pylist())
    tok = AutoTokenizer.from_pretrained(tiny_gpt2)
    model = AutoModelForCausalLM.from_pretrained(tiny_gpt2).eval()
    digits = [tok(d, add_special_tokens=False)["input_ids"][0] for d in "123456"]
    for q, score in zip(queries, got):
        ids = [tok.bos_token_id] + tok(op.params.prompt.replace("{instruction}", q))["input_ids"]
        with torch.no_grad():
            p = torch.softmax(model(torch.tensor([ids])).logits[0, -1, digits], -1).numpy()
        assert score == pytest.approx(float(p @ np.arange(1, 7)), rel=1e-4)
        assert 1 <= score <= 6


def test_classifier_score_is_the_probability_of_the_label(tiny_classifier):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    op = ClassifierScore(ClassifierScore.Params(model=str(tiny_classifier), label="label_1", batch_size=2))
    got = np.array(op.process(pa.record_batch({"text": TEXTS[:3]})).column("quality_classifier").to_pylist())
    tok = AutoTokenizer.from_pretrained(tiny_classifier)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_classifier).eval()
    with torch.no_grad():
        expected = [float(torch.softmax(model(**tok(t, return_tensors="pt")).logits[0], -1)[1]) for t in TEXTS[:3]]
    assert np.allclose(got, expected, rtol=1e-4)


def test_a_text_of_no_tokens_has_no_classifier_score_whatever_its_batch(tiny_classifier):
    # The tiny tokenizer adds no special tokens: "" has none. Alone in a model call it has no
    # shape; beside others, only the padding their length gave it.
    op = ClassifierScore(ClassifierScore.Params(model=str(tiny_classifier), batch_size=4))
    for texts in ([""], ["", "the cat sat on the mat"], ["a dog", None, ""]):
        scores = op.process(pa.record_batch({"text": pa.array(texts, pa.string())})).column("quality_classifier")
        assert [t for t, s in zip(texts, scores.to_pylist()) if s is None] == [t for t in texts if not t]


def test_classifier_refuses_an_unknown_label(tiny_classifier):
    from curate.errors import CurateError

    op = ClassifierScore(ClassifierScore.Params(model=str(tiny_classifier), label="educational"))
    with pytest.raises(CurateError, match="label_0, label_1, label_2"):
        op.setup()


def test_texts_longer_than_the_model_are_truncated_to_its_positions(tiny_gpt2):
    long = " ".join(["the cat sat on the mat"] * 100)  # far more tokens than the model's 128 positions
    op = Perplexity(Perplexity.Params(model=str(tiny_gpt2), instruction_column="q", response_column="a"))
    out = op.process(pa.record_batch({"q": [long, "add"], "a": [long, long]}))
    assert all(np.isfinite(out.column("quality_perplexity").to_pylist()))
    plain = Perplexity(Perplexity.Params(model=str(tiny_gpt2))).process(pa.record_batch({"text": [long]}))
    assert np.isfinite(plain.column("quality_perplexity")[0].as_py())
