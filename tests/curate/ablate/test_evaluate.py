"""The metrics against direct computations on a micro model: choice log-likelihoods summed token
by token, acc / acc_norm / gold_prob from them, bits per byte of a text set; the published
benchmark formats as lm-evaluation-harness builds their requests; the paired test's p-value."""

import json
import math

import numpy as np
import pytest

from curate.ablate import data, evaluate, stats
from curate.ablate.model import build, model_config
from curate.errors import CurateError

MICRO = {"model_type": "llama", "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
         "num_key_value_heads": 2, "intermediate_size": 64}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    import torch

    torch.set_num_threads(1)
    d = tmp_path_factory.mktemp("ev")
    (d / "micro.json").write_text(json.dumps(MICRO))
    tok = data.load_tokens(None, None, d)
    model = build(model_config(str(d / "micro.json"), tok.vocab, 64), seed=5)
    model.eval()
    return tok, model


def by_hand(model, ids: list[int], n_last: int) -> float:
    """Sum of log p of the last n_last ids, one forward pass per predicted token."""
    import torch

    total = 0.0
    with torch.no_grad():
        for j in range(len(ids) - n_last, len(ids)):
            logits = model(input_ids=torch.tensor([ids[:j]])).logits[0, -1].double()
            total += float(torch.log_softmax(logits, -1)[ids[j]])
    return total


def test_choice_loglikelihoods_equal_a_direct_computation(setup):
    tok, model = setup
    items = [evaluate.parse_item({"context": "The cat sat on the", "choices": ["mat.", "moon!"], "gold": 0}, "t"),
             evaluate.parse_item({"context": "Two plus two is", "choices": ["four", "five", "a fish"], "gold": 2}, "t")]
    assert items[0].choices == [" mat.", " moon!"]
    lls = evaluate.choice_logprobs(model, items, tok, 64, "cpu")
    for item, ll in zip(items, lls):
        for choice, got in zip(item.choices, ll):
            ids = [tok.eos_id] + list((item.context + choice).encode())
            assert got == pytest.approx(by_hand(model, ids, len(choice.encode())), abs=1e-4)
    m = evaluate.mc_metrics(items, lls)
    for i, (item, ll) in enumerate(zip(items, lls)):
        chars = np.array([len(c.strip()) for c in item.choices])
        assert m["acc"][i] == float(np.argmax(ll) == item.gold)
        assert m["acc_norm"][i] == float(np.argmax(ll / chars) == item.gold)
        p = np.exp(ll / chars)
        assert m["gold_prob"][i] == pytest.approx(p[item.gold] / p.sum())


def test_bits_per_byte_equal_a_direct_computation(setup):
    tok, model = setup
    texts = ["Hello there, world.", "A second document, somewhat longer than the first one is."]
    ts = evaluate.text_set("t", texts, tok, 10_000)
    nll = evaluate.doc_nll(model, ts, 16, "cpu")  # windows of 16: documents cross windows
    stream = ts.stream.tolist()
    for d, text in enumerate(texts):
        positions = [i for i in range(1, len(stream)) if ts.doc_of[i] == d]
        expected = 0.0
        import torch

        with torch.no_grad():
            for i in positions:  # the window holding target i starts at the multiple of 16 before it
                start = (i - 1) // 16 * 16
                logits = model(input_ids=torch.tensor([stream[start:i]])).logits[0, -1].double()
                expected -= float(torch.log_softmax(logits, -1)[stream[i]])
        assert nll[d] == pytest.approx(expected, abs=1e-4)
    assert evaluate.bpb(nll, ts.bytes) == pytest.approx(nll.sum() / (sum(len(t.encode()) for t in texts) * math.log(2)))


def test_published_formats_as_lm_eval_builds_them():
    hs = evaluate.parse_item({"ind": 7, "activity_label": "Making tea", "ctx_a": "A woman fills a kettle.",
                              "ctx_b": "she", "ctx": "A woman fills a kettle. she",
                              "endings": ["boils the water.", "eats the [title] kettle."], "label": 0}, "t")
    assert hs.context == "Making tea: A woman fills a kettle. She"
    assert hs.choices == [" boils the water.", " eats the. kettle."] and hs.gold == 0
    arc = evaluate.parse_item({"id": "1", "question": "Which is a liquid?", "answerKey": "B",
                               "choices": {"text": ["iron", "water"], "label": ["A", "B"]}}, "t")
    assert arc.context == "Question: Which is a liquid?\nAnswer:" and arc.choices == [" iron", " water"]
    assert arc.gold == 1
    piqa = evaluate.parse_item({"goal": "Keep bread fresh.", "sol1": "Seal it.", "sol2": "Sun it.", "label": 1}, "t")
    assert piqa.context == "Question: Keep bread fresh.\nAnswer:" and piqa.gold == 1
    with pytest.raises(CurateError, match="not a HellaSwag, ARC, PIQA"):
        evaluate.parse_item({"prompt": "x"}, "f.jsonl, line 3")


def test_paired_test_matches_scipy_and_the_verdicts():
    scipy_stats = pytest.importorskip("scipy.stats")
    a, b = [4.31, 4.35, 4.29, 4.40], [4.20, 4.27, 4.25, 4.30]
    diff, t, p = stats.paired_test(a, b)
    ref = scipy_stats.ttest_rel(b, a)
    assert t == pytest.approx(ref.statistic) and p == pytest.approx(ref.pvalue)
    assert stats._betainc(1.5, 0.5, 0.3) == pytest.approx(__import__("scipy.special").special.betainc(1.5, 0.5, 0.3))
    better, text = stats.verdict("A", "B", "bpb:eval", diff, p, 0.05)
    assert better == "B" and text.startswith("B better than A on bpb:eval by")
    better, text = stats.verdict("A", "B", "acc:arc", diff, p, 0.05)  # higher is better there
    assert better == "A"
    assert stats.verdict("A", "B", "bpb:x", 0.01, 0.3, 0.05) == (
        None, "A vs B on bpb:x: no difference beyond seed noise (diff +0.01, p = 0.3)")
    assert stats.paired_test([1.0, 2.0], [1.0, 2.0])[2] == 1.0
