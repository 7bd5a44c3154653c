"""What containment_dedup and minhash_dedup share: shingling and budget parameters, and columns."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Literal

import pyarrow as pa
from pydantic import Field

from curate.fit_state import Decisions
from curate.ops import TEXT, Global, Parallel, Params, reads_column
from curate_operators.dedup import signature_pass
from curate_operators.dedup.db import connect
from curate_operators.dedup.shingles import MAX_NGRAM, ShingleSpec
from curate_operators.dedup.threads import default_workers


class NearDedupParams(Params):
    shingle: Literal["word", "char"] = Field("word", description="Shingle unit: word n-grams or character n-grams.")
    ngram: int = Field(5, ge=1, le=MAX_NGRAM, description="n of the n-grams.")
    lowercase: bool = Field(True, description="Lowercase before shingling (NFKC is always applied).")
    prefer: str | None = reads_column(None, "Numeric column that decides which of two documents is kept "
                                            "(after size, for containment), then the smaller _id.")
    prefer_order: Literal["desc", "asc"] = Field("desc", description="desc: the highest `prefer` value is kept; "
                                                                     "asc: the lowest.")
    memory_gb: float = Field(1.0, gt=0.0, description="duckdb memory budget of each join (joins running at once as "
                             "pieces of the fit have one each); past it, a join spills to the workdir.")
    workers: int | None = Field(None, ge=1, description="duckdb threads of the fit's own joins (and of its pieces "
                                                        "when the fit is called outside a run; in a run each piece "
                                                        "has a core); default: the cores available.")


class NearDedup(Global):
    """Base of the near-duplicate operators: they read the text column (and `prefer`)."""

    requires = (TEXT,)

    @property
    def join_threads(self) -> int:
        """duckdb threads of the fit's own joins: `workers`, default the cores available."""
        return self.params.workers or default_workers()

    def signatures(self, batches: Iterable[pa.RecordBatch], workdir: Path, plan: signature_pass.Banding,
                   parallel: Parallel, **sign) -> signature_pass.PassOutput:
        """The fit's signature pass of `batches` into `workdir` (shingled as the params say),
        banded by `plan`; `sign` are signature_pass.run's sample, keep_sigs and heads."""
        p = self.params
        return signature_pass.run(
            batches, workdir,
            spec=ShingleSpec(p.shingle, p.ngram, p.lowercase, self.seed), plan=plan,
            text_column=self.text_column, prefer=p.prefer, parallel=parallel, **sign,
        )

    @staticmethod
    def none_removed(workdir: Path, reason: str) -> Decisions:
        """The decisions of a fit with no rows to compare (every row was removed before this step:
        duckdb finds no files)."""
        return Decisions(str(workdir / "decisions.parquet"), reason=reason, removed=0)

    def joins(self, workdir: Path, parallel: Parallel):
        """(memory_gb, connection) of the fit's joins: each join's budget within the run's."""
        memory_gb = parallel.budget_gb(self.params.memory_gb)
        return memory_gb, connect(workdir, memory_gb, self.join_threads)
