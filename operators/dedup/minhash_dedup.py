"""minhash_dedup: classic symmetric Jaccard near-duplicate removal (the datatrove/text-dedup baseline).

Same shingles, signatures and on-disk band rows as containment_dedup, with a fixed banding:
14 bands x 8 rows (datatrove's) by default, or chosen for a Jaccard `threshold` within
`num_perm` MinHash values as datasketch and text-dedup choose it (jaccard_bands.py). Documents
sharing a band key are linked to the best-ranked member of that bucket (duckdb, a band group at a
time); a chunked union-find turns the links into components (past the fit's memory budget, duckdb
does, over the links on disk: components.py); each component keeps its best-ranked member (`prefer` column, then
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

from curate.fit_state import COPY_OPTIONS, Decisions
from curate.ops import SERIAL, Parallel, Verdict
from curate_operators.dedup import components, resolve
from curate_operators.dedup.db import connect
from curate_operators.dedup.jaccard_bands import optimal_bands
from curate_operators.dedup.lsh import JaccardPlan
from curate_operators.dedup.minhash import estimated_jaccard
from curate_operators.dedup.near import NearDedup, NearDedupParams

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
    rows_per_band: int = Field(8, ge=1, description="MinHash values per band (datatrove's default: 8); "
                                                    "Jaccard threshold ~ (1/bands)^(1/rows).")
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
        plan = JaccardPlan(p.bands, p.rows_per_band)
        out = self.signatures(batches, workdir, plan, parallel, sample=None, keep_sigs=True)
        if out.rows == 0:
            return self.none_removed(workdir, "near_duplicate")
        memory_gb, con = self.joins(workdir, parallel)
        rank = resolve.rank_table(con, out.docs, f"prefer {p.prefer_order.upper()} NULLS LAST, _id")
        links = workdir / "links"
        links.mkdir(exist_ok=True)
        np.save(workdir / "rank.npy", rank)
        job = _LinksJob(out.buckets_dir, links, workdir / "rank.npy", memory_gb, parallel.threads or self.join_threads)
        parallel.map(partial(group_links, job), range(len(out.bucket_groups)), out.bucket_groups)
        dups = workdir / "dups.parquet"
        if UNION_FIND_BYTES_PER_ROW * len(rank) <= parallel.budget_gb(float("inf")) * 2**30:
            _components_in_memory(links, rank, p.edge_chunk, dups)
        else:  # past the budget: on the edge list on disk, to the same components
            _components_on_disk(con, links, dups)
        decisions = workdir / "decisions.parquet"
        jaccards = workdir / "jaccards"
        jaccards.mkdir(exist_ok=True)
        # Signatures gathered a bounded chunk at a time: at edge_chunk rows, the two sides'
        # signatures took 1.8 GB (3M bench documents, 112 values of 8 bytes a row).
        rows = max(1, SIGNATURE_CHUNK_BYTES // (plan.num_perm * 8))
        for i, chunk in enumerate(pq.ParquetFile(dups).iter_batches(batch_size=rows)):
            dup, keeper = chunk.column("_ord").to_numpy(), chunk.column("keeper").to_numpy()
            a, _ = out.sigs.gather(dup)
            b, _ = out.sigs.gather(keeper)
            jaccard = estimated_jaccard(a.reshape(-1, plan.num_perm), b.reshape(-1, plan.num_perm))
            pq.write_table(pa.table({"_ord": dup, "keeper": keeper, "jaccard": jaccard}),
                           jaccards / f"part-{i:06d}.parquet")
        removed = pq.ParquetFile(dups).metadata.num_rows
        if removed == 0:  # no chunk was written: duckdb needs a file to read
            pq.write_table(DUPS_SCHEMA.append(pa.field("jaccard", pa.float64())).empty_table(),
                           jaccards / "part-000000.parquet")
        con.execute(f"""
            COPY (
              SELECT x._ord,
                     json_object('duplicate_of', d._id, 'jaccard_estimate', round(x.jaccard, 4))::VARCHAR AS detail
              FROM read_parquet('{jaccards}/*.parquet') x JOIN read_parquet('{out.docs}') d ON d._ord = x.keeper
              ORDER BY x._ord
            ) TO '{decisions}' {COPY_OPTIONS}
        """)
        con.close()
        return Decisions(str(decisions), reason="near_duplicate", removed=removed)

    def apply(self, batch: pa.RecordBatch, state: Decisions) -> Verdict:
        return state.verdict(batch)


# The signatures of one side of a chunk of duplicate pairs, gathered at once for their Jaccard estimate.
SIGNATURE_CHUNK_BYTES = 64 << 20
# What the in-memory union-find holds per row: its parent array and find's temporaries (int64s).
UNION_FIND_BYTES_PER_ROW = 48
DUPS_SCHEMA = pa.schema([("_ord", pa.int64()), ("keeper", pa.int64())])


def _components_in_memory(links: Path, rank: np.ndarray, edge_chunk: int, dups: Path) -> None:
    """dups.parquet: (_ord, keeper) of every row whose component's best-ranked member is another."""
    parts = sorted(links.glob("*.parquet"))  # none when no document has a shingle
    chunks = (
        (c.column("u").to_numpy(), c.column("v").to_numpy())
        for part in parts for c in pq.ParquetFile(part).iter_batches(batch_size=edge_chunk)
    )
    root = resolve.union_find(chunks, len(rank))
    ord_of_rank = np.empty(len(rank), np.int64)
    valid = rank >= 0
    ord_of_rank[rank[valid]] = np.flatnonzero(valid)
    dup_ranks = np.flatnonzero(root != np.arange(len(rank)))
    pq.write_table(pa.table({"_ord": ord_of_rank[dup_ranks], "keeper": ord_of_rank[root[dup_ranks]]},
                            schema=DUPS_SCHEMA), dups)


def _components_on_disk(con, links: Path, dups: Path) -> None:
    """As _components_in_memory, the components found by duckdb over the links on disk; rows in
    the same order (by the duplicate's rank)."""
    if not any(links.glob("*.parquet")):
        pq.write_table(DUPS_SCHEMA.empty_table(), dups)
        return
    table = components.smallest_members(con, str(links / "*.parquet"))
    con.execute(f"""
        COPY (SELECT d._ord, k._ord AS keeper FROM {table} c JOIN ranks d ON d.rank = c.node
              JOIN ranks k ON k.rank = c.root ORDER BY c.node) TO '{dups}' (FORMAT parquet)""")


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
