"""best_of_n: keep the best-scored `keep` rows of each group (default: the answers `respond`
sampled for one instruction, grouped by `_parent_id`), by any score column already made: an LLM
judge's (`llm_judge`: quality_llm_judge), a reward model's or classifier's (`classifier_score`),
a heuristic's. Best-of-n / rejection sampling as ../shared/specs/synth.md section 6 describes it
(sample n, score each, keep the argmax; UltraFeedback: Cui et al., arXiv 2310.01377).

Every row not kept goes to the trace as `best_of_n` with its rank, its score and the kept row's
(`rank 3 of 4: quality_llm_judge 5 < 7 of <_id>`), so a response is never lost silently. Ties
and rows without a score (the judge failed) rank after scored ones, then by position in the
input: a group with no score at all keeps its first row (counted as `groups_unscored`); rows
without a group are groups of one. The fit summary in the manifest gives the groups, the
candidates, and the mean score of all candidates and of those kept: what selection did to Q.

As exact_dedup: the fit spills (group, score, _ord) to Parquet and duckdb ranks each group, so
memory stays bounded; apply drops the losers by `_ord` (curate/fit_state.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Literal

import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import Field

from curate.fit_state import COPY_OPTIONS, Decisions
from curate.ops import SERIAL, Global, Parallel, Params, Verdict, reads_column
from curate_operators.dedup.db import FLOOR_MB


class BestOfNParams(Params):
    score: str = reads_column(description="The score column: the best `keep` rows of each group by it stay.",
                              min_length=1)
    group: str = reads_column("_parent_id", "The column rows are grouped by (respond's `_parent_id`: its "
                                            "instruction's row).", min_length=1)
    keep: int = Field(1, ge=1, description="Rows kept per group.")
    order: Literal["desc", "asc"] = Field("desc", description="desc: the highest score is best; asc: the lowest.")
    memory_mb: int = Field(1024, gt=0, description="Memory for ranking before spilling to disk.")


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class BestOfN(Global):
    """Keep the best `keep` rows of each group by a score; trace the others with their rank and score."""

    name = "best_of_n"
    Params = BestOfNParams

    def fit(self, batches: Iterable[pa.RecordBatch], workdir: Path, parallel: Parallel = SERIAL) -> Decisions:
        import duckdb

        p = self.params
        for i, batch in enumerate(batches):
            pq.write_table(pa.table({"_ord": batch.column("_ord"), "_id": batch.column("_id").cast(pa.string()),
                                     "g": batch.column(p.group).cast(pa.string()),
                                     "score": batch.column(p.score).cast(pa.float64())}),
                           workdir / f"scores-{i:06d}.parquet")
        removed_path = workdir / "removed.parquet"
        if not any(workdir.glob("scores-*.parquet")):
            return Decisions(str(removed_path), reason="best_of_n", removed=0)
        con = duckdb.connect()
        memory_mb = max(FLOOR_MB, int(parallel.budget_gb(p.memory_mb / 1024) * 1024))  # within the run's budget
        con.execute(f"SET memory_limit='{memory_mb}MB'; SET temp_directory='{workdir / 'spill'}'")
        # NaN is no score (as null): it would otherwise sort above every number
        con.execute(f"""CREATE VIEW ranked AS SELECT _ord, _id, score,
                            first_value(_id) OVER w AS keeper, first_value(score) OVER w AS best,
                            row_number() OVER w AS rank, count(*) OVER (PARTITION BY g) AS n, g
                        FROM (SELECT _ord, _id, coalesce(g, chr(0) || _id) AS g,
                                     CASE WHEN isnan(score) THEN NULL ELSE score END AS score
                              FROM read_parquet('{workdir}/scores-*.parquet'))
                        WINDOW w AS (PARTITION BY g ORDER BY score {p.order.upper()} NULLS LAST, _ord)""")
        name = _sql_text(p.score)
        shown = "coalesce(CAST({} AS VARCHAR), 'no score')"
        con.execute(f"""
            COPY (SELECT _ord, 'rank ' || rank || ' of ' || n || ': ' || {name} || ' ' || {shown.format('score')}
                               || ' < ' || {shown.format('best')} || ' of ' || keeper AS detail
                  FROM ranked WHERE rank > {p.keep} ORDER BY _ord)
            TO '{removed_path}' {COPY_OPTIONS}""")
        groups, candidates, unscored, mean_all, mean_kept, removed = con.execute(f"""
            SELECT count(DISTINCT g), count(*), count(DISTINCT g) FILTER (WHERE rank = 1 AND score IS NULL),
                   avg(score), avg(score) FILTER (WHERE rank <= {p.keep}), count(*) FILTER (WHERE rank > {p.keep})
            FROM ranked""").fetchone()
        con.close()
        for f in workdir.glob("scores-*.parquet"):
            f.unlink()
        facts = {"groups": int(groups), "candidates": int(candidates), "kept": int(candidates - removed),
                 "groups_unscored": int(unscored)}
        if mean_all is not None:
            facts.update({f"mean_{p.score}_candidates": round(float(mean_all), 4),
                          f"mean_{p.score}_kept": round(float(mean_kept), 4)})
        return Decisions(str(removed_path), reason="best_of_n", removed=int(removed), facts=facts)

    def apply(self, batch: pa.RecordBatch, state: Decisions) -> Verdict:
        return state.verdict(batch)
