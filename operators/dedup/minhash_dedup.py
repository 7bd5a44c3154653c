"""minhash_dedup: classic symmetric Jaccard near-duplicate removal (the datatrove/text-dedup baseline).

Same shingles, signatures and on-disk band rows as containment_dedup, with a fixed banding:
14 bands x 8 rows (datatrove's) by default, or chosen for a Jaccard `threshold` within
`num_perm` MinHash values as datasketch and text-dedup choose it (jaccard_bands.py). Documents sharing a band key are linked to the
best-ranked member of that bucket (duckdb, a band group at a time); a chunked union-find turns
the links into components; each component keeps its best-ranked member (`prefer` column, then
_id). The trace names the kept member and the Jaccard estimated from the two signatures. The
signing and the band groups' links are pieces of the fit's `parallel` map (the run's workers);
the components do not depend on the order of the links.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import Field, model_validator

from curate.ops import SERIAL, Parallel, Verdict
from operators.dedup import resolve, signature_pass
from operators.dedup.db import connect
from operators.dedup.decisions import COPY_OPTIONS, Decisions
from operators.dedup.jaccard_bands import optimal_bands
from operators.dedup.near import NearDedup, NearDedupParams
from operators.dedup.lsh import JaccardPlan
from operators.dedup.minhash import estimated_jaccard
from operators.dedup.shingles import ShingleSpec
from operators.dedup.threads import default_workers


DEFAULT_NUM_PERM = 112  # datatrove's signature: 14 bands x 8 rows


class MinhashParams(NearDedupParams):
    threshold: float | None = Field(None, gt=0.0, lt=1.0, description="Jaccard threshold: bands and rows_per_band are "
                                    "chosen for it (the pair minimising false positive + negative areas, as "
                                    "datasketch and text-dedup do) within num_perm MinHash values. Default: "
                                    "bands x rows_per_band as given.")
    num_perm: int | None = Field(None, ge=1, le=4096, description="With threshold: MinHash values the banding may use "
                                 f"(default {DEFAULT_NUM_PERM}); more separate pairs near the threshold better, "
                                 "at the cost of signing time.")
    bands: int = Field(14, ge=1, description="LSH bands (datatrove's default: 14).")
    rows_per_band: int = Field(8, ge=1, description="MinHash values per band (datatrove's default: 8); Jaccard threshold ~ (1/bands)^(1/rows).")
    edge_chunk: int = Field(1_000_000, ge=1, description="Candidate pairs per union-find chunk (bounds memory).")

    @model_validator(mode="before")
    @classmethod
    def _bands_for_threshold(cls, data: Any) -> Any:
        """`threshold` chooses bands and rows_per_band, so giving them too is a conflict; a
        threshold that is no number in (0, 1) is left to the field's own check."""
        if not isinstance(data, dict):
            return data
        given = [k for k in ("bands", "rows_per_band") if k in data]
        threshold, num_perm = data.get("threshold"), data.get("num_perm")
        if threshold is None:
            if num_perm is not None:
                raise ValueError("num_perm goes with threshold, which chooses bands and rows_per_band within it; "
                                 "without threshold the signature has bands x rows_per_band values")
            return data
        if given:
            raise ValueError(f"give threshold, or bands and rows_per_band, not both: threshold chooses them "
                             f"(remove {' and '.join(given)}, or threshold)")
        usable = isinstance(threshold, (int, float)) and not isinstance(threshold, bool) and 0 < threshold < 1
        perms = DEFAULT_NUM_PERM if num_perm is None else num_perm
        if usable and isinstance(perms, int) and 1 <= perms <= 4096:
            data = {**data}
            data["bands"], data["rows_per_band"] = optimal_bands(float(threshold), perms)
        return data


class MinhashDedup(NearDedup):
    """Remove Jaccard near-duplicates (MinHash LSH), keeping the best-ranked document of each cluster."""

    name = "minhash_dedup"
    Params = MinhashParams

    def fit(self, batches: Iterable[pa.RecordBatch], workdir: Path, parallel: Parallel = SERIAL) -> Decisions:
        p = self.params
        workdir = Path(workdir)
        workers = p.workers or default_workers()
        plan = JaccardPlan(p.bands, p.rows_per_band)
        out = signature_pass.run(
            batches, workdir,
            spec=ShingleSpec(p.shingle, p.ngram, p.lowercase, self.seed), plan=plan,
            text_column=self.text_column, prefer=p.prefer, sample=None, keep_sigs=True, parallel=parallel,
        )
        if out.rows == 0:  # every row was removed before this step: nothing to compare (duckdb finds no files)
            return Decisions(str(workdir / "decisions.parquet"), reason="near_duplicate", removed=0)
        con = connect(workdir, p.memory_gb, workers)
        rank = resolve.rank_table(con, out.docs_glob, f"prefer {p.prefer_order.upper()} NULLS LAST, _id")
        links = workdir / "links"
        links.mkdir(exist_ok=True)
        np.save(workdir / "rank.npy", rank)
        job = _LinksJob(out.buckets_dir, links, workdir / "rank.npy", p.memory_gb, parallel.threads or workers)
        parallel.map(partial(group_links, job), range(len(out.bucket_groups)), out.bucket_groups)
        parts = sorted(links.glob("*.parquet"))  # none when no document has a shingle
        chunks = (
            (c.column("u").to_numpy(), c.column("v").to_numpy())
            for part in parts for c in pq.ParquetFile(part).iter_batches(batch_size=p.edge_chunk)
        )
        root = resolve.union_find(chunks, len(rank))
        ord_of_rank = np.empty(len(rank), np.int64)
        valid = rank >= 0
        ord_of_rank[rank[valid]] = np.flatnonzero(valid)
        dup_ranks = np.flatnonzero(root != np.arange(len(rank)))
        dup = ord_of_rank[dup_ranks]
        keeper = ord_of_rank[root[dup_ranks]]
        jaccard = np.zeros(len(dup))
        for s in range(0, len(dup), p.edge_chunk):
            a, _ = out.sigs.gather(dup[s : s + p.edge_chunk])
            b, _ = out.sigs.gather(keeper[s : s + p.edge_chunk])
            jaccard[s : s + p.edge_chunk] = estimated_jaccard(a.reshape(-1, plan.num_perm), b.reshape(-1, plan.num_perm))
        con.register("dups", pa.table({"_ord": dup, "keeper": keeper, "jaccard": jaccard}))
        decisions = workdir / "decisions.parquet"
        con.execute(f"""
            COPY (
              SELECT x._ord, json_object('duplicate_of', d._id, 'jaccard_estimate', round(x.jaccard, 4))::VARCHAR AS detail
              FROM dups x JOIN read_parquet('{out.docs_glob}') d ON d._ord = x.keeper ORDER BY x._ord
            ) TO '{decisions}' {COPY_OPTIONS}
        """)
        con.close()
        return Decisions(str(decisions), reason="near_duplicate", removed=len(dup))

    def apply(self, batch: pa.RecordBatch, state: Decisions) -> Verdict:
        return state.verdict(batch)


@dataclass(frozen=True)
class _LinksJob:
    buckets_dir: Path
    links: Path
    rank: Path  # rank.npy: rank by _ord
    memory_gb: float
    threads: int


def group_links(job: _LinksJob, i: int, group: str) -> None:
    """One piece: band group `group`'s star links (member rank -> best rank of each bucket it
    shares), distinct, to links/part-i (its own duckdb, spilling to a directory of its own).
    Star links connect a bucket with one edge per member."""
    rank = np.load(job.rank)
    valid = np.flatnonzero(rank >= 0)
    con = connect(job.links / f"spill-{i:05d}", job.memory_gb, job.threads)
    con.register("ranks", pa.table({"_ord": valid, "rank": rank[valid]}))
    con.execute(f"""
        COPY (
          SELECT DISTINCT rank AS u, head AS v FROM (
            SELECT r.rank, min(r.rank) OVER (PARTITION BY k.band, k.key) AS head
            FROM read_parquet('{job.buckets_dir / group}/*.parquet') k JOIN ranks r ON r._ord = k.ord
          ) WHERE rank <> head
        ) TO '{job.links / f"part-{i:05d}.parquet"}' (FORMAT parquet)
    """)
    con.close()
