"""What containment_dedup and minhash_dedup share: shingling and budget parameters, and columns."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from curate.ops import TEXT, Global, Params, reads_column
from curate_operators.dedup.shingles import MAX_NGRAM


class NearDedupParams(Params):
    shingle: Literal["word", "char"] = Field("word", description="Shingle unit: word n-grams or character n-grams.")
    ngram: int = Field(5, ge=1, le=MAX_NGRAM, description="n of the n-grams.")
    lowercase: bool = Field(True, description="Lowercase before shingling (NFKC is always applied).")
    prefer: str | None = reads_column(None, "Numeric column that decides which of two documents is kept "
                                            "(after size, for containment), then the smaller _id.")
    prefer_order: Literal["desc", "asc"] = Field("desc", description="desc: the highest `prefer` value is kept; asc: the lowest.")
    memory_gb: float = Field(1.0, gt=0.0, description="duckdb memory budget of each join (joins running at once as "
                             "pieces of the fit have one each); past it, a join spills to the workdir.")
    workers: int | None = Field(None, ge=1, description="duckdb threads of the fit's own joins (and of its pieces when the fit "
                                "is called outside a run; in a run each piece has a core); default: the cores available.")


class NearDedup(Global):
    """Base of the near-duplicate operators: they read the text column (and `prefer`)."""

    requires = (TEXT,)
