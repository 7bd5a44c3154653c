"""tokenize: each text's token ids under a Hugging Face `tokenizers` tokenizer, for training.

The tokenizer is loaded as token_count loads it (tokenizer.json, a directory with one, or a hub
id in the local cache; truncation and padding off). Nothing is added to a document unless the
recipe says so: `bos` / `eos` name the token put before / after every document (Megatron's
`--append-eod` is `eos: "<|endoftext|>"`, or `</s>`, ...), and `special_tokens` applies the
tokenizer's own template ([CLS] ... [SEP]) instead.

`input_ids` holds the ids as list<uint16> when the vocabulary has fewer than 65,500 ids and as
list<int32> otherwise (Megatron's rule, `dtype: auto`), or the `dtype` asked for; the output
formats (megatron, packed Parquet) write that type as it is. The manifest's step entry carries
the tokens produced (`counts.tokens`).
"""

from __future__ import annotations

from itertools import chain
from typing import Literal

import numpy as np
import pyarrow as pa
from pydantic import Field

from curate.columns import put, text_values
from curate.errors import RecipeError
from curate.ops import TEXT, Map, Params, loaded, writes_column
from curate_operators.text.token_count import load_tokenizer

MEGATRON_UINT16_LIMIT = 65_500  # Megatron picks uint16 for vocabularies below this size
DTYPES = {"uint16": pa.uint16(), "int32": pa.int32(), "int64": pa.int64()}


class TokenizeParams(Params):
    tokenizer: str = Field(description="tokenizer.json, a directory with one, or a hub id in the local HF cache.")
    column: str = writes_column("input_ids", "Column for the token ids (the output formats read input_ids).")
    bos: str | int | None = Field(None, description="Token (or id) put before every document; none by default.")
    eos: str | int | None = Field(None, description="Token (or id) put after every document, e.g. <|endoftext|> "
                                                    "or </s> (Megatron's --append-eod); none by default.")
    special_tokens: bool = Field(False, description="Apply the tokenizer's own template ([CLS] ... [SEP]).")
    dtype: Literal["auto", "uint16", "int32", "int64"] = Field(
        "auto", description="Type of the ids: auto is uint16 below 65,500 ids in the vocabulary, else int32.")


class Tokenize(Map):
    """Adds each text's token ids (`input_ids`); the run's total goes to the manifest."""

    name = "tokenize"
    Params = TokenizeParams
    requires = (TEXT,)
    total = 0  # tokens produced since take_counts

    def packages(self) -> tuple[str, ...]:
        return ("tokenizers",)

    # Loaded in this order (a missing tokenizer fails before an unknown token, then the dtype).
    @loaded
    def tokenizer(self):
        return load_tokenizer(self.params.tokenizer, self.name)

    @loaded
    def bos_id(self) -> int | None:
        return self._token_id("bos")

    @loaded
    def eos_id(self) -> int | None:
        return self._token_id("eos")

    @loaded
    def value_type(self) -> pa.DataType:
        return self._value_type(self.tokenizer.get_vocab_size(with_added_tokens=True))

    def _token_id(self, field: str) -> int | None:
        tokenizer = self.tokenizer
        vocab = tokenizer.get_vocab_size(with_added_tokens=True)
        token = getattr(self.params, field)
        if token is None:
            return None
        if isinstance(token, int):
            if not 0 <= token < vocab:
                raise RecipeError(field, f"id {token} is outside the vocabulary (ids 0..{vocab - 1})")
            return token
        found = tokenizer.token_to_id(token)
        if found is None:
            raise RecipeError(field, f"{token!r} is not a token of {self.params.tokenizer}")
        return found

    def _value_type(self, vocab: int) -> pa.DataType:
        dtype = self.params.dtype
        if dtype == "auto":
            return pa.uint16() if vocab < MEGATRON_UINT16_LIMIT else pa.int32()
        if dtype == "uint16" and vocab > 1 << 16:
            raise RecipeError("dtype", f"uint16 holds ids below 65,536; {self.params.tokenizer} has {vocab:,} ids "
                                       f"(use int32, or auto)")
        return DTYPES[dtype]

    def check_schema(self, schema: pa.Schema) -> None:
        # A missing tokenizer, an unknown bos/eos token or too narrow a dtype, before any worker.
        _ = self.bos_id, self.eos_id, self.value_type

    def output_schema(self, schema: pa.Schema) -> pa.Schema:
        field = pa.field(self.params.column, pa.list_(self.value_type))
        at = schema.get_field_index(field.name)
        return schema.set(at, field) if at >= 0 else schema.append(field)

    def process(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        texts = text_values(batch, self.text_column, self.name)
        # encode_batch_fast: the same ids as encode_batch without the character offsets, which
        # nothing here uses (their tracking is a tenth of the tokenizer's time).
        encoded = self.tokenizer.encode_batch_fast(texts, add_special_tokens=self.params.special_tokens)
        # len(e) is the encoding's own count: each e.ids makes a new Python list, so the ids are
        # taken once, straight into the output's integer type.
        lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
        ids = np.fromiter(chain.from_iterable(e.ids for e in encoded), self.value_type.to_pandas_dtype(),
                          int(lengths.sum()))
        ids, lengths = self._framed(ids, lengths)
        offsets = np.zeros(len(lengths) + 1, np.int32)
        np.cumsum(lengths, out=offsets[1:])
        self.total += int(offsets[-1])
        return put(batch, self.params.column, pa.ListArray.from_arrays(pa.array(offsets), pa.array(ids)))

    def _framed(self, ids: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`ids` with the BOS id put before and the EOS id after every document, in one insert."""
        starts = np.cumsum(lengths) - lengths
        marks = [(token, at) for token, at in ((self.bos_id, starts), (self.eos_id, starts + lengths))
                 if token is not None]
        if not marks:
            return ids, lengths
        # Interleaved document by document (BOS, EOS, next BOS, ...), the positions never decrease,
        # and np.insert keeps that order among equal positions: an empty document still gets its
        # BOS before its EOS, and each EOS comes before the next document's BOS.
        where = np.stack([at for _, at in marks], axis=1).ravel()
        what = np.tile([token for token, _ in marks], len(lengths))
        return np.insert(ids, where, what), lengths + len(marks)

    def take_counts(self) -> dict[str, int]:
        total, self.total = self.total, 0
        return {"tokens": total} if total else {}
