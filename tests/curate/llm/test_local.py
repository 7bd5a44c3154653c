"""The transformers backend with a tiny random causal LM on CPU: batched generation with left
padding gives what one prompt at a time gives; tokens and finish reasons are counted."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("transformers")

from curate.llm.local import TransformersBackend  # noqa: E402
from curate.llm.types import Request  # noqa: E402
from tests.curate.llm.tiny_lm import build  # noqa: E402


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    return build(tmp_path_factory.mktemp("tiny-lm"))


def _ask(backend, requests):
    return asyncio.run(backend.generate(requests, lambda i, a: None))


def test_batched_left_padded_generation_equals_one_prompt_at_a_time(tiny_lm):
    texts = ["the doc", "a paraphrase of the following paragraph is given to me", "one two three one two",
             "convert the paragraph into a conversational format with multiple tags", "the"]
    requests = [Request(({"role": "user", "content": t},), max_tokens=12) for t in texts]
    batched = _ask(TransformersBackend(str(tiny_lm), batch_size=8), requests)
    alone = _ask(TransformersBackend(str(tiny_lm), batch_size=1), requests)
    assert [a.text for a in batched] == [a.text for a in alone]
    assert [a.tokens_out for a in batched] == [a.tokens_out for a in alone]
    backend = TransformersBackend(str(tiny_lm))
    backend.load()
    assert backend.tokenizer.padding_side == "left"
    prompt = backend.prompt(requests[0])
    assert prompt == "user : the doc </s> assistant : "  # the chat template, with the generation prompt
    for a, t in zip(batched, texts):
        assert a.finish_reason in ("stop", "length") and 1 <= a.tokens_out <= 12
        assert a.tokens_in == len(backend.tokenizer(backend.prompt(Request(({"role": "user", "content": t},))),
                                                    add_special_tokens=False)["input_ids"])
