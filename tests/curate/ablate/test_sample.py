"""The equal-token sample: exactly --tokens ids, the same for the same seed, held-out documents
never in it, an arm too small refused by name and count unless --allow-repeat."""

import numpy as np
import pytest

from curate.ablate import data
from curate.errors import CurateError

TEXTS = [f"Document number {i} says {'many words ' * (i % 7 + 1)}and ends." for i in range(400)]


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    return data.load_tokens(None, None, tmp_path_factory.mktemp("tok"))


def test_byte_tokenizer_ids_are_the_bytes(tok):
    text = "héllo, wörld\n"
    assert tok.encode([text])[0].tolist() == list(text.encode("utf-8"))
    assert tok.eos_id == 256 and tok.vocab == 257


@pytest.mark.parametrize("n", [1, 777, 4096, 10_000])
def test_sample_has_exactly_n_tokens_and_is_deterministic(tok, n):
    a = data.sample_arm("a", TEXTS, tok, n, seed=3, allow_repeat=False, holdout=0.05, excluded=set())
    b = data.sample_arm("a", TEXTS, tok, n, seed=3, allow_repeat=False, holdout=0.05, excluded=set())
    assert len(a.train) == n and np.array_equal(a.train, b.train)
    assert a.held_out == b.held_out


def test_another_seed_another_sample_and_held_out_never_trained(tok):
    a = data.sample_arm("a", TEXTS, tok, 8000, seed=0, allow_repeat=False, holdout=0.1, excluded=set())
    b = data.sample_arm("a", TEXTS, tok, 8000, seed=1, allow_repeat=False, holdout=0.1, excluded=set())
    assert not np.array_equal(a.train, b.train)
    assert a.held_out and sorted(a.held_out) == sorted(b.held_out)  # by content, whatever the seed
    stream = bytes(int(x) for x in a.train if x < 256)
    trained = {t for t in TEXTS if t.encode() in stream}
    assert trained and not trained & set(a.held_out)
    # An eval text's documents are excluded too.
    excluded = {data.content_key(t) for t in TEXTS[:50]}
    c = data.sample_arm("a", TEXTS, tok, 8000, seed=0, allow_repeat=False, holdout=0.0, excluded=excluded)
    stream = bytes(int(x) for x in c.train if x < 256)
    assert not any(t.encode() in stream for t in TEXTS[:50])


def test_each_training_seed_draws_its_own_sample_and_the_held_out_stays(tok):
    """Draw s (training seed s): another sample of exactly n tokens, the same each time; draw 0 is
    the sample as before; the held-out documents and their order are the same for every draw."""
    kw = dict(seed=0, allow_repeat=False, holdout=0.1, excluded=set())
    base = data.sample_arm("a", TEXTS, tok, 8000, **kw)
    draws = [data.sample_arm("a", TEXTS, tok, 8000, draw=d, **kw) for d in (0, 1, 2)]
    assert np.array_equal(draws[0].train, base.train)
    assert all(len(d.train) == 8000 for d in draws)
    assert not np.array_equal(draws[1].train, draws[0].train) and not np.array_equal(draws[2].train, draws[1].train)
    assert np.array_equal(data.sample_arm("a", TEXTS, tok, 8000, draw=2, **kw).train, draws[2].train)
    assert all(d.held_out == base.held_out for d in draws)


def test_too_small_arm_is_refused_by_name_and_count(tok):
    total = sum(len(t.encode()) + 1 for t in TEXTS[:10])
    with pytest.raises(CurateError, match=rf"arm small has {total:,} training tokens, fewer than --tokens 100,000"):
        data.sample_arm("small", TEXTS[:10], tok, 100_000, seed=0, allow_repeat=False, holdout=0.0, excluded=set())
    s = data.sample_arm("small", TEXTS[:10], tok, 100_000, seed=0, allow_repeat=True, holdout=0.0, excluded=set())
    assert len(s.train) == 100_000 and s.available == total
    assert s.epochs == pytest.approx(100_000 / total)


def test_too_small_arm_exits_2_naming_it(cli, corpora, ablate_args, tmp_path):
    res = cli(*ablate_args(corpora, tmp_path / "o", f"good={corpora / 'demo'}", f"tiny={corpora / 'eval.txt'}",
                           tokens=64 * 8 * 200))
    assert res.exit_code == 2, res.output
    assert "arm tiny has" in res.output and "fewer than --tokens 102,400" in " ".join(res.output.split())


def test_a_normalized_copy_is_held_out_with_its_original(tok):
    raw = [f"  Text {i}:\tSome  WORDS here,\n\n\n and more.  " for i in range(300)]
    normalized = [" ".join(t.split()) for t in raw]
    a = data.sample_arm("raw", raw, tok, 100, seed=0, allow_repeat=False, holdout=0.2, excluded=set())
    b = data.sample_arm("norm", normalized, tok, 100, seed=0, allow_repeat=False, holdout=0.2, excluded=set())
    assert a.held_out and sorted(" ".join(t.split()) for t in a.held_out) == sorted(b.held_out)


def test_arms_sharing_documents_draw_them_in_the_same_order(tok):
    """A recipe's output (here: every third document dropped) trains at each seed on the documents
    of its input's sample that it kept, in the same order, then on the next ones: the two samples
    differ by what was dropped, not by two unrelated draws; another seed draws other documents."""
    kept = [t for i, t in enumerate(TEXTS) if i % 3]
    kw = dict(allow_repeat=False, holdout=0.0, excluded=set())
    for seed, draw in ((0, 0), (0, 2), (5, 1)):
        a = docs_of(data.sample_arm("in", TEXTS, tok, 6000, seed=seed, draw=draw, **kw).train)[:-1]
        b = docs_of(data.sample_arm("out", kept, tok, 6000, seed=seed, draw=draw, **kw).train)[:-1]
        shared = [d for d in a if d in set(kept)]
        assert len(shared) > 10 and b[: len(shared)] == shared
    first = docs_of(data.sample_arm("in", TEXTS, tok, 6000, seed=0, **kw).train)
    assert first[:10] != docs_of(data.sample_arm("in", TEXTS, tok, 6000, seed=1, **kw).train)[:10]


def test_copies_of_a_document_are_drawn_independently(tok):
    """The n-th copy of a text has its own place in the order: a sample meets copies as a uniform
    draw does, not all of a document's copies together or none."""
    texts = [t for t in TEXTS[:40] for _ in range(10)]  # each text 10 times
    s = data.sample_arm("dups", texts, tok, 5000, seed=0, allow_repeat=False, holdout=0.0, excluded=set())
    drawn = docs_of(s.train)[:-1]
    counts = sorted({drawn.count(t) for t in drawn})
    assert len(drawn) > 40 and max(counts) < 10 and len(set(drawn)) > len(drawn) / 3


def docs_of(train) -> list[str]:
    """The documents of a sample, in order (the last one cut at the token count)."""
    return bytes(int(x) if x < 256 else 0 for x in train).decode("utf-8", "replace").split("\x00")
