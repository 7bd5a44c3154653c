"""token_count: the number of tokens of each text under a Hugging Face `tokenizers` tokenizer.

`tokenizer` is a tokenizer.json file, a directory holding one (a saved model), or a hub id
already in the local Hugging Face cache (nothing is downloaded during a run). Truncation and
padding configured in the file are switched off: every token of the text counts. The manifest's
step entry carries the total (`counts.tokens`), since datasets are sized in tokens.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
from pydantic import Field

from curate.columns import put, text_values
from curate.errors import CurateError, RecipeError
from curate.ops import TEXT, Map, Params, loaded, writes_column
from curate.paths import local_path


class TokenCountParams(Params):
    tokenizer: str = local_path(hub=True, description="tokenizer.json, a directory with one, or a hub id in the local HF cache.")
    column: str = writes_column("token_count", "Column for the count.")
    special_tokens: bool = Field(False, description="Count the tokenizer's special tokens ([CLS], <s>, ...) too.")


def load_tokenizer(where: str, step: str = "token_count"):
    """The tokenizer at `where` (see the module doc), truncation and padding off; `step` names the
    operator in errors."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise CurateError(f"{step} needs the tokenizers package (pip install 'curate[web]')") from None
    path = Path(where).expanduser()
    if path.is_dir():
        path = path / "tokenizer.json"
    if not path.is_file():
        cached = None
        if "/" in where and not Path(where).expanduser().exists():
            try:
                from huggingface_hub import try_to_load_from_cache

                cached = try_to_load_from_cache(where, "tokenizer.json")
            except (ImportError, ValueError):  # no huggingface_hub, or not a valid hub id
                pass
        if not isinstance(cached, str):
            raise RecipeError("tokenizer", f"{step}: no tokenizer.json at {where}, and it is not a hub id in the "
                                           f"local Hugging Face cache (download it first, e.g. huggingface-cli download)")
        path = Path(cached)
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


class TokenCount(Map):
    """Adds each text's token count; the run's total goes to the manifest."""

    name = "token_count"
    Params = TokenCountParams
    requires = (TEXT,)
    total = 0  # tokens counted since take_counts

    def packages(self) -> tuple[str, ...]:
        return ("tokenizers",)

    @loaded
    def tokenizer(self):
        return load_tokenizer(self.params.tokenizer)

    def process(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        texts = text_values(batch, self.text_column, self.name)
        encoded = self.tokenizer.encode_batch(texts, add_special_tokens=self.params.special_tokens)
        counts = np.fromiter((len(e.ids) for e in encoded), np.int64, len(encoded))
        self.total += int(counts.sum())
        return put(batch, self.params.column, counts, pa.int64())

    def take_counts(self) -> dict[str, int]:
        total, self.total = self.total, 0
        return {"tokens": total} if total else {}
