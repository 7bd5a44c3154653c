"""tokenize: the tokenizer's ids, BOS/EOS only where asked, their type from the vocabulary size."""

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from curate.errors import RecipeError
from curate_operators.text.tokenize import Tokenize
from tests.operators.text.tiny_tokenizer import minilm, word_tokenizer

pytest.importorskip("tokenizers")


def tokenize(tokenizer, texts, **params):
    op = Tokenize(Tokenize.Params(tokenizer=str(tokenizer), **params))
    op.setup()
    out = op.process(pa.RecordBatch.from_pydict({"text": pa.array(texts, pa.string())}))
    return out.column("input_ids"), op


@pytest.fixture(scope="module")
def words(tmp_path_factory):
    return word_tokenizer(tmp_path_factory.mktemp("tok") / "tokenizer.json", 100)


def test_ids_are_the_tokenizers_with_nothing_added_by_default():
    ids, op = tokenize(minilm(), ["hello world", "", None, "word " * 300])
    assert ids.type == pa.list_(pa.uint16())  # 30,522 ids: Megatron's uint16
    assert ids.to_pylist() == [[7592, 2088], [], [], [2773] * 300]  # no truncation at the file's 128
    assert op.take_counts() == {"tokens": 302} and op.take_counts() == {}


def test_the_tokenizers_template_on_request():
    ids, _ = tokenize(minilm(), ["hello world"], special_tokens=True)
    assert ids.to_pylist() == [[101, 7592, 2088, 102]]


def test_bos_and_eos_by_token_or_id(words):
    ids, op = tokenize(words, ["w5 w6", "", "w7"], bos="<s>", eos=2)
    assert ids.to_pylist() == [[1, 5, 6, 2], [1, 2], [1, 7, 2]]
    assert op.take_counts() == {"tokens": 9}


@settings(max_examples=60, deadline=None)
@given(docs=st.lists(st.lists(st.integers(3, 99), max_size=5), max_size=8), bos=st.booleans(), eos=st.booleans())
@example(docs=[[], [], [4]], bos=True, eos=True)  # empty documents keep BOS before EOS
@example(docs=[], bos=True, eos=True)
def test_every_document_is_framed_by_exactly_its_bos_and_eos(words, docs, bos, eos):
    texts = [" ".join(f"w{i}" for i in doc) for doc in docs]
    ids, _ = tokenize(words, texts, bos="<s>" if bos else None, eos="</s>" if eos else None)
    assert ids.to_pylist() == [[1] * bos + doc + [2] * eos for doc in docs]


def test_vocabularies_of_65500_ids_or_more_get_int32(tmp_path):
    big = word_tokenizer(tmp_path / "big.json", 70_000)
    ids, _ = tokenize(big, ["w69999 w3"], eos="</s>")
    assert ids.type == pa.list_(pa.int32()) and ids.to_pylist() == [[69999, 3, 2]]
    ids, _ = tokenize(big, ["w69999"], dtype="int64")
    assert ids.type == pa.list_(pa.int64())
    with pytest.raises(RecipeError, match="uint16 holds ids below 65,536; .* has 70,000 ids") as e:
        tokenize(big, ["w3"], dtype="uint16")
    assert e.value.where == "dtype"


def test_an_eos_or_bos_the_vocabulary_lacks_is_named(words):
    with pytest.raises(RecipeError, match="'<|endoftext|>' is not a token of") as e:
        tokenize(words, ["w3"], eos="<|endoftext|>")
    assert e.value.where == "eos"
    with pytest.raises(RecipeError, match="id 100 is outside the vocabulary") as e:
        tokenize(words, ["w3"], bos=100)
    assert e.value.where == "bos"


def test_output_schema_gives_the_ids_type_before_any_row(words):
    op = Tokenize(Tokenize.Params(tokenizer=str(words)))
    schema = op.output_schema(pa.schema([("text", pa.string()), ("input_ids", pa.string())]))
    assert schema.field("input_ids").type == pa.list_(pa.uint16()) and schema.names == ["text", "input_ids"]


def test_missing_tokenizer_is_a_recipe_error(tmp_path):
    with pytest.raises(RecipeError, match="tokenize: no tokenizer.json at"):
        Tokenize(Tokenize.Params(tokenizer=str(tmp_path / "none"))).check_schema(pa.schema([]))


def test_ids_stay_exact_across_batches(words):
    ids, _ = tokenize(words, [f"w{i} w{i + 1}" for i in range(3, 90)], eos="</s>")
    flat = np.asarray(ids.values)
    assert flat.dtype == np.uint16 and flat[-3:].tolist() == [89, 90, 2]
