"""containment_dedup: remove documents contained in larger ones (C(A,B) = |S(A)∩S(B)|/|S(A)| >= tau).

fit: one pass over the text (shingles, MinHash, LSH Ensemble band rows, shingle samples and
their first values, all to disk); duckdb joins the band rows into candidate pairs, a band group
at a time; each pair is screened on the first values (a file small enough for the page cache)
and, unless clearly below tau, verified on the stored shingle samples, a chunk of pairs at a
time; resolution removes every document with a verified edge to a better-ranked one. The
signing, the joins and the verification are pieces of the fit's `parallel` map (the run's
workers), merged in a fixed order. apply: looks the batch's _ords up in the decisions file.
"""

from __future__ import annotations

import logging
import math
import time
from contextlib import nullcontext
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pydantic import Field

from curate.fit_state import Decisions
from curate.ops import SERIAL, Parallel, Verdict
from curate_operators.dedup import resolve, signature_pass
from curate_operators.dedup.db import FLOOR_MB, connect
from curate_operators.dedup.lsh import ContainmentPlan
from curate_operators.dedup.near import NearDedup, NearDedupParams
from curate_operators.dedup.store import RowStore
from curate_operators.dedup.verify import SAMPLE_DTYPE, containment, cutoffs, screened_containment

log = logging.getLogger(__name__)

# Band rows a group's self-join takes per GB of its memory: 24M (8 bands x 3M documents) joined
# within 1 GB; 80M (10M documents) ran duckdb out of it. Larger groups are joined in parts.
JOIN_ROWS_PER_GB = 16_000_000
# max_bucket is checked on every KEY_COUNT_SAMPLE-th document (_ord), the count scaled up: counting
# every (band, key) of a group took 60% of its join's time at 1M documents, the sample 9%.
KEY_COUNT_SAMPLE = 16


class ContainmentParams(NearDedupParams):
    threshold: float = Field(0.8, gt=0.0, le=1.0, description="tau: remove A when |S(A)∩S(B)|/|S(A)| >= tau "
                                                               "for a larger B.")
    num_perm: int = Field(128, ge=8, le=1024, description="MinHash permutations per document.")
    max_miss: float = Field(0.01, gt=0.0, lt=1.0, description="LSH design target: chance of missing a pair "
                                                                 "exactly at tau, worst size ratio of its partition "
                                                                 "pair.")
    partition_ratio: float = Field(1.41, gt=1.0, description="Size partitions are geometric classes of this "
                                                                  "ratio (LSH Ensemble).")
    verify_sample: int = Field(2048, ge=16, description="Shingle hashes kept per document for "
                                                                "verification; exact for documents with fewer.")
    screen_sample: int = Field(64, ge=0, description="First pass of verification on this many "
                                                              "smallest hashes per document; 0 disables it.")
    screen_margin: float = Field(0.3, ge=0.0, le=1.0, description="Pairs whose first-pass containment is "
                                                                     "below threshold - margin are not verified "
                                                                     "further.")
    # A one-row band key is one MinHash value: the smallest hashed shingle of each document that
    # has it, so the documents of a key are those whose smallest shingle is one common phrase,
    # and its pairs grow with the square of the corpus. Measured on the demo corpus (band keys of
    # size-class gaps >= 3): 205k pair-band rows at 285k documents, 2.4M at 990k (x11.7 for x3.5);
    # with keys of more than 100 documents left out, 161k and 1.24M, while the rows left out were
    # 0.02% of the band rows at 990k (a contained pair shares tens of bands: it loses ~none).
    # Counted on a sample of the documents (KEY_COUNT_SAMPLE), so the cut-off is approximate.
    # Bands of several rows are always joined: there a key shared by many is a near-copy.
    max_bucket: int = Field(100, ge=2, description="One-row band keys (one MinHash value) shared by more documents "
                                                  "than this are common shingles: left out of the candidate join "
                                                  "(counted in the manifest's summary).")
    verify_chunk: int = Field(25_000, ge=1, description="Candidate pairs verified per chunk (bounds "
                                                        "memory: ~10 KB a pair).")
    # 0.25 GB: at 1M bench documents (a 1.9 GB sample file) gathers that mapped the file afresh
    # verified as fast as the kept map (4.3 s vs 4.5 s, warm page cache), while the kept map made
    # each worker's resident memory grow with the corpus (2.1 GB there).
    sample_map_gb: float = Field(0.25, ge=0.0, description="Keep the shingle-sample file (4 B a sampled shingle) "
                                                          "mapped during verification while it is at most this size: "
                                                          "resident up to the file's size. Larger files are read row "
                                                          "by row, outside resident memory.")


class ContainmentDedup(NearDedup):
    """Remove documents contained in larger ones: |S(A)∩S(B)|/|S(A)| >= tau (trace names the container)."""

    name = "containment_dedup"
    Params = ContainmentParams

    def fit(self, batches: Iterable[pa.RecordBatch], workdir: Path, parallel: Parallel = SERIAL) -> Decisions:
        p = self.params
        workdir = Path(workdir)
        plan = ContainmentPlan(p.num_perm, p.threshold, p.max_miss, p.partition_ratio)
        started = time.monotonic()
        out = self.signatures(batches, workdir, plan, parallel, sample=p.verify_sample, keep_sigs=False,
                              heads=p.screen_sample or None)
        log.info("containment_dedup: signed %d rows in %.1fs", out.rows, time.monotonic() - started)
        if out.rows == 0:
            return self.none_removed(workdir, "contained")
        memory_gb, con = self.joins(workdir, parallel)
        # Larger documents first; then `prefer` (per prefer_order); then _id.
        rank = resolve.rank_table(con, out.docs, f"n DESC, prefer {p.prefer_order.upper()} NULLS LAST, _id")
        candidates, common = _candidate_pairs(con, out, plan, workdir, memory_gb, parallel.threads or self.join_threads,
                                              p.max_bucket, parallel)
        n_candidates = pq.ParquetFile(candidates).metadata.num_rows
        log.info("containment_dedup: %d candidate pairs at %.1fs", n_candidates, time.monotonic() - started)
        sizes = np.zeros(len(rank), np.int64)
        n_by_ord = con.execute("SELECT _ord, n FROM read_parquet(?)", [out.docs]).fetchnumpy()
        sizes[n_by_ord["_ord"].astype(np.int64)] = n_by_ord["n"]
        edges_dir = self._verify(out.samples, out.heads, sizes, rank, candidates, workdir, parallel)
        log.info("containment_dedup: verified at %.1fs", time.monotonic() - started)
        decisions = workdir / "decisions.parquet"
        resolve.containment_decisions(con, str(edges_dir / "*.parquet"), out.docs, str(decisions))
        removed = con.execute(f"SELECT count(*) FROM read_parquet('{decisions}')").fetchone()[0]
        con.close()
        log.info("containment_dedup: %d removed at %.1fs", removed, time.monotonic() - started)
        return Decisions(str(decisions), reason="contained", removed=int(removed),
                         facts={"candidate_pairs": n_candidates, "common_keys_left_out": common[0],
                                "common_key_rows_left_out": common[1]})

    def _verify(self, samples: RowStore, heads: RowStore | None, sizes: np.ndarray, rank: np.ndarray,
                candidates: Path, workdir: Path, parallel: Parallel) -> Path:
        """Verified edges (child, parent, containment) as Parquet parts, one per candidate chunk.

        Chunks are pieces of `parallel`, each reading the samples and the per-row arrays
        (saved here) from the workdir; their edges are written in chunk order.
        """
        p = self.params
        edges_dir = workdir / "edges"
        edges_dir.mkdir(exist_ok=True)
        screened = heads is not None
        job = _VerifyJob(samples.path, workdir / "cut.npy", heads.path if screened else None,
                         workdir / "head_cut.npy" if screened else None, workdir / "rank.npy", p.threshold,
                         p.screen_margin, parallel.budget_gb(p.sample_map_gb))
        started = time.monotonic()
        np.save(job.cut, cutoffs(samples, sizes))
        if screened:
            np.save(job.head_cut, cutoffs(heads, sizes, p.screen_sample))
        np.save(job.rank, rank)
        log.info("containment_dedup: cut-offs of %d rows in %.1fs", len(sizes), time.monotonic() - started)
        chunks = ((c.column("a").to_numpy(), c.column("b").to_numpy())
                  for c in pq.ParquetFile(candidates).iter_batches(batch_size=p.verify_chunk))
        for i, edges in enumerate(parallel.stream(partial(verify_chunk, job), chunks)):
            pq.write_table(edges, edges_dir / f"part-{i:06d}.parquet")
        if not any(edges_dir.iterdir()):
            pq.write_table(pa.table({"child": pa.array([], pa.int64()), "parent": pa.array([], pa.int64()),
                                     "containment": pa.array([], pa.float64())}), edges_dir / "part-000000.parquet")
        return edges_dir

    def apply(self, batch: pa.RecordBatch, state: Decisions) -> Verdict:
        return state.verdict(batch)


@dataclass(frozen=True)
class _VerifyJob:
    """What a verification piece reads: the samples (and their heads, where pairs are screened),
    cut-offs and ranks by path, and the params."""

    samples: Path
    cut: Path
    heads: Path | None
    head_cut: Path | None
    rank: Path
    threshold: float
    screen_margin: float
    sample_map_gb: float


def verify_chunk(job: _VerifyJob, pairs: tuple[np.ndarray, np.ndarray]) -> pa.Table:
    """One piece: the verified edges among a chunk of candidate pairs (a, b)."""
    a, b = pairs
    rank = np.load(job.rank, mmap_mode="r")
    # The samples of the pairs the screen lets through are read here and there in a file the page
    # cache may not hold; the heads were just read through for their cut-offs (row after row, in
    # file order), so the cache holds them where it can, and a miss brings its neighbours.
    samples = RowStore(job.samples, SAMPLE_DTYPE, scattered=True)
    heads = RowStore(job.heads, SAMPLE_DTYPE) if job.heads else None
    cut = np.load(job.cut, mmap_mode="r")
    # Only the worse-ranked document of a pair can be removed, so only its containment matters.
    child = np.where(rank[a] > rank[b], a, b)
    parent = np.where(rank[a] > rank[b], b, a)
    # Random reads over a map kept open cost no system call; past the budget, each row is read
    # (pread) so resident memory stays bounded. Every pair reads the heads, the pairs the screen
    # lets through the samples: the heads are kept first.
    budget = job.sample_map_gb * 2**30
    keep_heads = heads is not None and heads.nbytes <= budget
    keep_samples = samples.nbytes + (heads.nbytes if keep_heads else 0) <= budget
    with (heads.kept_mapped() if keep_heads else nullcontext(),
          samples.kept_mapped() if keep_samples else nullcontext()):
        if heads is None:
            c = containment(samples, cut, child, parent)
        else:
            c = screened_containment(samples, heads, cut, np.load(job.head_cut, mmap_mode="r"), child, parent,
                                     job.threshold - job.screen_margin)
    ok = c >= job.threshold
    return pa.table({"child": child[ok], "parent": parent[ok], "containment": c[ok]})


def _candidate_pairs(con, out: signature_pass.PassOutput, plan: ContainmentPlan, workdir: Path, memory_gb: float,
                     threads: int, max_bucket: int, parallel: Parallel) -> tuple[Path, tuple[int, int]]:
    """Distinct (a, b) pairs sharing as many band keys as the plan asks of their partition pair
    (`hits`), by b; and the one-row band keys left out as common (how many, their rows).

    Each band group is joined on its own (its hash table fits the memory budget), as a piece of
    `parallel`, counting the bands each pair shares there; then the counts of the pairs found by
    several groups are added up.
    """
    parts = workdir / "candidate_parts"
    parts.mkdir(exist_ok=True)
    job = _PairsJob(out.buckets_dir, parts, plan, memory_gb, threads, max_bucket)
    started = time.monotonic()
    common = parallel.map(partial(group_pairs, job), range(len(out.bucket_groups)), out.bucket_groups)
    found = sum(pq.ParquetFile(f).metadata.num_rows for f in parts.glob("*.parquet"))
    log.info("containment_dedup: %d band groups joined in %.1fs: %d (pair, group) rows", len(out.bucket_groups),
             time.monotonic() - started, found)
    candidates = workdir / "candidates.parquet"
    if out.bucket_groups:
        # Sorted by candidate: a verification chunk then reads its parents from one narrow
        # stretch of the sample file, which halves its cost at a million rows (cache misses).
        con.execute(f"""COPY (SELECT a, b FROM read_parquet('{parts}/*.parquet') GROUP BY a, b
                            HAVING sum(shared) >= any_value(hits) ORDER BY b, a) TO '{candidates}' (FORMAT parquet)""")
    else:
        pq.write_table(pa.table({"a": pa.array([], pa.int64()), "b": pa.array([], pa.int64())}), candidates)
    return candidates, (sum(k for k, _ in common), sum(n for _, n in common))


@dataclass(frozen=True)
class _PairsJob:
    buckets_dir: Path
    parts: Path
    plan: ContainmentPlan
    memory_gb: float
    threads: int
    max_bucket: int


def group_pairs(job: _PairsJob, i: int, group: str) -> tuple[int, int]:
    """One piece: the pairs of band group `group` with the bands they share there and the bands
    they must share in all, to candidate_parts/part-i-* (its own duckdb, spilling to a directory
    of its own). A group of more rows than the join's memory holds is joined in parts, each the
    rows of one stretch of the key range (band files hold their rows by stretch, so a part reads
    its own row groups only): a band's key is shared within one part, and the counts of a pair
    found in several parts are added up with the other groups'. In a group of one-row bands,
    keys of more than `max_bucket` documents (estimated on a sample) are left out; returns
    how many, and their estimated rows."""
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in (job.buckets_dir / group).glob("*.parquet"))
    parts = max(1, math.ceil(rows / (JOIN_ROWS_PER_GB * max(job.memory_gb, FLOOR_MB / 1024))))  # duckdb's least
    con = connect(job.parts / f"spill-{i:05d}", job.memory_gb, job.threads)
    con.register("plan", job.plan.table())
    one_row = group.startswith("r1-")
    common = np.zeros(2, np.int64)
    for part in range(parts):
        source = f"SELECT * FROM read_parquet('{job.buckets_dir / group}/*.parquet'){_key_range(part, parts)}"
        if one_row:  # a key's rows are all in one part (the part is a stretch of keys): its count is whole
            con.execute(f"""CREATE OR REPLACE TEMP TABLE common AS
                            SELECT band, key, count(*) * {KEY_COUNT_SAMPLE} AS n FROM ({source})
                            WHERE ord % {KEY_COUNT_SAMPLE} = 0
                            GROUP BY band, key HAVING count(*) * {KEY_COUNT_SAMPLE} > {job.max_bucket}""")
            common += con.execute("SELECT count(*), coalesce(sum(n), 0) FROM common").fetchone()
            source = f"SELECT * FROM ({source}) ANTI JOIN common USING (band, key)"
        con.execute(f"""
            COPY (
              WITH g AS ({source})
              SELECT q.ord AS a, c.ord AS b, count(*) AS shared, any_value(plan.hits) AS hits
              FROM g q JOIN g c ON q.key = c.key AND q.band = c.band
              JOIN plan ON plan.gap = c.part - q.part AND plan.r = q.r
              WHERE q.band < plan.bands AND (c.part > q.part OR (c.part = q.part AND q.ord < c.ord))
              GROUP BY q.ord, c.ord
            ) TO '{job.parts / f"part-{i:05d}-{part:03d}.parquet"}' (FORMAT parquet)
        """)
    con.close()
    return int(common[0]), int(common[1])


def _key_range(part: int, parts: int) -> str:
    """The WHERE clause of part `part` of `parts` equal stretches of the 64-bit key range (keys
    are evenly spread: band_keys); none for a group joined whole."""
    if parts == 1:
        return ""
    lo, hi = part * 2**64 // parts, (part + 1) * 2**64 // parts
    return f" WHERE key >= {lo}::UBIGINT" + (f" AND key < {hi}::UBIGINT" if part < parts - 1 else "")
