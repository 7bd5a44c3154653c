"""The one pass over the text that both near-dedup operators share.

Each batch is shingled, signed and banded as one piece of the fit's `parallel` map (the run's
worker processes or Ray tasks), which writes the batch's band rows under its batch index and
returns its docs rows, samples and signatures; this process appends those to their files in
batch order, so the files do not depend on where or in what order pieces ran:

  docs.parquet             _ord, _id, shingle count, prefer value: one file, DOCS_GROUP_ROWS
                           rows a row group, however many batches
  buckets/rR-gG/part-N.parquet  band rows (r, band, key, ord, part), grouped by rows per band R
                           and band group G, so each group can be joined on its own in memory
  samples.bin (+ index)    each row's smallest `sample` shingle hashes (all of them when fewer),
                           as 32-bit sample values (verify.sample_values)
  sigs.bin (+ index)       each row's MinHash signature (when asked)

Memory is bounded by the batches in flight; everything that grows with the corpus is on disk.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Iterable, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from curate.ops import Parallel
from curate_operators.dedup.minhash import permutations, signatures
from curate_operators.dedup.shingles import ShingleSets, ShingleSpec, shingle_sets
from curate_operators.dedup.store import RowStore, RowStoreWriter, ranges
from curate_operators.dedup.verify import SAMPLE_DTYPE, sample_values

# Bands per on-disk group: a group of 8 bands holds 8 rows per document, small enough for
# duckdb to join in memory at millions of documents.
BANDS_PER_GROUP = 8
# Each band file holds its rows by stretch of the key range (the key's top KEY_BITS bits), in
# as many row groups: a join of a group in parts of its key range reads only the row groups of
# its part (duckdb skips the others on their min/max), so a group of ten million documents
# joined in five parts reads its files about once, not five times. Within a stretch the rows
# keep their order (by document), so `ord` delta-encodes to a byte or two a row.
KEY_BITS = 4
# The docs rows a row group of docs.parquet. duckdb's reads of the docs (the ranks, the decisions'
# join with them, in the driver) hold state per file and per row group read: with a file of each
# batch, 250 files of 2 rows (a fit over the shards of 1,000 small WARC files) peaked 4 MB above 3
# such files, for 500 rows; one file of a row group reads as the 3 did. In this process, they hold
# a row group's worth of rows (a few MB) until it is written.
DOCS_GROUP_ROWS = 1 << 16
DOCS_SCHEMA = pa.schema([("_ord", pa.int64()), ("_id", pa.string()), ("n", pa.int64()), ("prefer", pa.float64())])


class Banding(Protocol):
    """An LSH plan (lsh.py): its signature width and the band rows of a batch."""

    num_perm: int

    def bucket_rows(self, ords: np.ndarray, sig: np.ndarray, sizes: np.ndarray) -> pa.Table: ...


@dataclass
class PassOutput:
    docs: str  # docs.parquet
    buckets_dir: Path
    bucket_groups: list[str]  # sub-directories of buckets_dir
    samples: RowStore | None
    heads: RowStore | None  # each sample's first values (`heads` of them), where asked
    sigs: RowStore | None
    rows: int


@dataclass(frozen=True)
class _Job:
    """What every piece of the pass needs (it pickles: pieces may run on other machines)."""

    workdir: Path
    spec: ShingleSpec
    plan: Banding
    text_column: str
    prefer: str | None
    sample: int | None
    keep_sigs: bool


def run(
    batches: Iterable[pa.RecordBatch],
    workdir: Path,
    *,
    spec: ShingleSpec,
    plan: Banding,
    text_column: str,
    prefer: str | None,
    sample: int | None,
    keep_sigs: bool,
    parallel: Parallel,
    heads: int | None = None,
) -> PassOutput:
    """Sign `batches` (docs, band rows, and where asked each row's first `sample` shingle hashes,
    the first `heads` of those again in a small file of their own, and the signatures) into
    `workdir`, a batch per piece of `parallel`."""
    workdir = Path(workdir)
    (workdir / "buckets").mkdir(parents=True, exist_ok=True)
    docs_writer = _DocsWriter(workdir / "docs.parquet")
    job = _Job(workdir, spec, plan, text_column, prefer, sample, keep_sigs)
    sample_writer = RowStoreWriter(workdir / "samples.bin", SAMPLE_DTYPE) if sample else None
    # The heads: read for every candidate pair where the whole sample is read for a few. At ten
    # million documents the samples (19 GB) outgrow the page cache and each such read is the
    # disk's (a millisecond here); the heads (64 of up to 2,048 values a row) stay in it.
    heads_writer = RowStoreWriter(workdir / "heads.bin", SAMPLE_DTYPE) if sample and heads else None
    sig_writer = RowStoreWriter(workdir / "sigs.bin") if keep_sigs else None
    rows = 0
    for ords, docs, samples, sig in parallel.stream(partial(sign_batch, job), enumerate(batches)):
        docs_writer.append(docs)
        if sample_writer is not None:
            sample_writer.append(ords, *samples)
        if heads_writer is not None:
            heads_writer.append(ords, *_first(*samples, heads))
        if sig_writer is not None:
            sig_writer.append(ords, sig.reshape(-1), np.arange(len(ords) + 1, dtype=np.int64) * plan.num_perm)
        rows += len(ords)
    return PassOutput(
        docs=str(docs_writer.close()),
        buckets_dir=workdir / "buckets",
        bucket_groups=sorted(d.name for d in (workdir / "buckets").iterdir() if d.is_dir()),
        samples=sample_writer.close() if sample_writer else None,
        heads=heads_writer.close() if heads_writer else None,
        sigs=sig_writer.close() if sig_writer else None,
        rows=rows,
    )


def sign_batch(job: _Job, item: tuple[int, pa.RecordBatch]):
    """One piece: batch `index`'s band rows written under its index; returns its ords, its docs
    rows, its samples (values, offsets) when asked, and its signatures when asked."""
    index, batch = item
    sets = shingle_sets(batch.column(job.text_column), job.spec)
    sig = signatures(sets, *permutations(job.plan.num_perm, job.spec.seed))
    ords = batch.column("_ord").to_numpy().astype(np.int64)
    sizes = sets.sizes
    has = sizes > 0  # empty documents are never candidates
    docs = pa.table({
        "_ord": ords,
        "_id": batch.column("_id").cast(pa.string()),
        "n": pa.array(sizes.astype(np.int64)),
        "prefer": batch.column(job.prefer).cast(pa.float64()) if job.prefer else pa.nulls(len(ords), pa.float64()),
    }, schema=DOCS_SCHEMA)
    _write_band_groups(job.plan.bucket_rows(ords[has], sig[has], sizes[has]), job.workdir / "buckets", index)
    return ords, docs, _head(sets, job.sample) if job.sample else None, sig if job.keep_sigs else None


class _DocsWriter:
    """docs.parquet from the batches' docs rows, in the order given, DOCS_GROUP_ROWS rows a row group."""

    def __init__(self, path: Path):
        self.path = path
        self._held: list[pa.Table] = []  # the rows of the next row group, not written yet
        self._rows = 0
        self._writer = pq.ParquetWriter(path, DOCS_SCHEMA)

    def append(self, docs: pa.Table) -> None:
        self._held.append(docs)
        self._rows += docs.num_rows
        while self._rows >= DOCS_GROUP_ROWS:
            self._write(DOCS_GROUP_ROWS)

    def _write(self, rows: int) -> None:
        held = pa.concat_tables(self._held)
        self._writer.write_table(held.slice(0, rows), row_group_size=rows)
        rest = held.slice(rows)
        self._held, self._rows = ([rest] if rest.num_rows else []), rest.num_rows

    def close(self) -> Path:
        if self._rows:
            self._write(self._rows)
        self._writer.close()
        return self.path


def _write_band_groups(rows: pa.Table, root: Path, index: int) -> None:
    """Split a batch's band rows by (rows per band, band // BANDS_PER_GROUP) into their directories,
    each file's rows by stretch of the key range (KEY_BITS)."""
    group = rows.column("r").to_numpy().astype(np.int64) * 65536 + rows.column("band").to_numpy() // BANDS_PER_GROUP
    stretch = (rows.column("key").to_numpy() >> np.uint64(64 - KEY_BITS)).astype(np.int64)
    order = np.argsort(group << KEY_BITS | stretch, kind="stable")  # stable: by document within a stretch
    groups, starts = np.unique(group[order], return_index=True)
    for g, lo, hi in zip(groups, starts, np.append(starts[1:], len(order))):
        directory = root / f"r{g // 65536}-g{g % 65536:04d}"
        directory.mkdir(exist_ok=True)  # pieces running at once may both make it
        # Random 64-bit keys: compression and a dictionary only cost time. The other columns
        # repeat (r, band, part over few values; ord rising by document): dictionary-, run-
        # length- and delta-encoded they take a fraction of the disk a plain file does.
        pq.write_table(rows.take(order[lo:hi]), directory / f"part-{index:06d}.parquet", compression="none",
                       use_dictionary=["r", "band", "part"], column_encoding={"ord": "DELTA_BINARY_PACKED"},
                       row_group_size=-(-(hi - lo) // 2**KEY_BITS))


def _head(sets: ShingleSets, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's first (smallest) m hashes as sample values: a consistent sample, exact below m."""
    values, offsets = _first(sets.values, sets.offsets, m)
    return sample_values(values), offsets


def _first(values: np.ndarray, offsets: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """(values, offsets) of each row's first m values, of rows given as (values, offsets)."""
    sizes = np.diff(offsets)
    if sizes.max(initial=0) <= m:
        return values, offsets
    kept = np.minimum(sizes, m)
    firsts = np.zeros(len(kept) + 1, np.int64)
    np.cumsum(kept, out=firsts[1:])
    return values[ranges(offsets[:-1], kept)], firsts
