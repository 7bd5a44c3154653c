"""chunk: split each text into chunks of about `max_tokens` tokens on sentence boundaries
(pysbd's rule-based splitter), one row per chunk with `chunk_index` and `_parent_id`.

Tokens are whitespace-separated words unless `tokenizer` names a Hugging Face tokenizer (local
directory or cached name) to count with. A sentence longer than `max_tokens` is a chunk alone.
Rows without text go to the trace (`no_text`)."""

from __future__ import annotations

from typing import Callable

import numpy as np
import pyarrow as pa
from pydantic import Field

from curate.ops import TEXT, Map, Params, Result, Verdict, loaded
from curate.paths import local_path


class ChunkParams(Params):
    max_tokens: int = Field(300, gt=0, description="About this many tokens per chunk (the WRAP paper: 300).")
    tokenizer: str | None = local_path(None, hub=True, description="Hugging Face tokenizer to count tokens; default: words.")
    language: str = Field("en", description="Language of the sentence splitter (pysbd).")


class Chunk(Map):
    name = "chunk"
    Params = ChunkParams
    changes_rows = True
    requires = (TEXT,)
    provides = ("chunk_index",)
    def packages(self) -> tuple[str, ...]:
        return ("pysbd", "transformers") if self.params.tokenizer else ("pysbd",)

    @loaded
    def splitter(self):
        """pysbd's sentence splitter."""
        import pysbd

        return pysbd.Segmenter(language=self.params.language, clean=False)

    @loaded
    def count(self) -> Callable[[str], int]:
        """text -> its tokens."""
        if not self.params.tokenizer:
            return lambda s: len(s.split())
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(self.params.tokenizer)
        return lambda s: len(tok(s, add_special_tokens=False)["input_ids"])

    def chunks(self, text: str) -> list[str]:
        out, current, size = [], [], 0
        for sentence in self.splitter.segment(text):
            n = self.count(sentence)
            if current and size + n > self.params.max_tokens:
                out.append("".join(current).strip())
                current, size = [], 0
            current.append(sentence)
            size += n
        if current:
            out.append("".join(current).strip())
        return [c for c in out if c]

    def process(self, batch: pa.RecordBatch):
        texts = batch.column(self.text_column).to_pylist()
        keep = np.zeros(len(texts), dtype=bool)
        parents, pieces, index = [], [], []
        for i, text in enumerate(texts):
            found = self.chunks(text) if isinstance(text, str) else []
            keep[i] = bool(found)
            parents += [i] * len(found)
            pieces += found
            index += range(len(found))
        rows = batch.take(pa.array(parents, pa.int64()))
        columns = {n: rows.column(n) for n in rows.schema.names if n not in ("_id", "_parent_id", "chunk_index")}
        columns[self.text_column] = pa.array(pieces, pa.string())
        columns["chunk_index"] = pa.array(index, pa.int32())
        columns["_parent_id"] = rows.column("_id").cast(pa.string())
        return Result(pa.RecordBatch.from_pydict(columns), Verdict(keep, "no_text", "the row has no text to chunk"))
