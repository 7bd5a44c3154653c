"""The one pass over the text that both near-dedup operators share.

Each batch is shingled, signed and banded in a worker thread (numpy and polars release the
GIL, so threads use the cores without copying batches to other processes); the main thread
writes the results in batch order, so the files do not depend on thread timing:

  docs/part-N.parquet      _ord, _id, shingle count, size partition, prefer value
  buckets/rR-gG/part-N.parquet  band rows (r, band, key, ord, part), grouped by rows per band R
                           and band group G, so each group can be joined on its own in memory
  samples.bin (+ index)    each row's smallest `sample` shingle hashes (all of them when fewer),
                           as 32-bit sample values (verify.sample_values)
  sigs.bin (+ index)       each row's MinHash signature (when asked)

Memory is bounded by the batches in flight; everything that grows with the corpus is on disk.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from operators.dedup.minhash import permutations, signatures
from operators.dedup.shingles import ShingleSets, ShingleSpec, shingle_sets
from operators.dedup.threads import ordered_map
from operators.dedup.store import RowStore, RowStoreWriter, ranges
from operators.dedup.verify import SAMPLE_DTYPE, sample_values

# (ords, signatures, set sizes) -> bucket rows for this batch
# Bands per on-disk group: a group of 8 bands holds 8 rows per document, small enough for
# duckdb to join in memory at millions of documents.
BANDS_PER_GROUP = 8
BucketFn = Callable[[np.ndarray, np.ndarray, np.ndarray], pa.Table]


@dataclass
class PassOutput:
    docs_glob: str
    buckets_dir: Path
    bucket_groups: list[str]  # sub-directories of buckets_dir
    samples: RowStore | None
    sigs: RowStore | None
    rows: int


def run(
    batches: Iterable[pa.RecordBatch],
    workdir: Path,
    *,
    spec: ShingleSpec,
    num_perm: int,
    text_column: str,
    prefer: str | None,
    buckets: BucketFn,
    sample: int | None,
    keep_sigs: bool,
    workers: int,
) -> PassOutput:
    workdir = Path(workdir)
    (workdir / "docs").mkdir(parents=True, exist_ok=True)
    (workdir / "buckets").mkdir(parents=True, exist_ok=True)
    a, b = permutations(num_perm, spec.seed)

    def work(batch: pa.RecordBatch):
        sets = shingle_sets(batch.column(text_column), spec)
        sig = signatures(sets, a, b)
        ords = batch.column("_ord").to_numpy().astype(np.int64)
        sizes = sets.sizes
        has = sizes > 0  # empty documents are never candidates
        docs = pa.table({
            "_ord": ords,
            "_id": batch.column("_id").cast(pa.string()),
            "n": pa.array(sizes.astype(np.int64)),
            "prefer": batch.column(prefer).cast(pa.float64()) if prefer else pa.nulls(len(ords), pa.float64()),
        })
        band_rows = buckets(ords[has], sig[has], sizes[has])
        return ords, sets, sig, docs, band_rows

    sample_writer = RowStoreWriter(workdir / "samples.bin", SAMPLE_DTYPE) if sample else None
    sig_writer = RowStoreWriter(workdir / "sigs.bin") if keep_sigs else None
    rows = 0
    index = 0

    def write(result) -> None:
        nonlocal rows, index
        ords, sets, sig, docs, band_rows = result
        pq.write_table(docs, workdir / "docs" / f"part-{index:06d}.parquet")
        _write_band_groups(band_rows, workdir / "buckets", index)
        if sample_writer is not None:
            sample_writer.append(ords, *_head(sets, sample))
        if sig_writer is not None:
            sig_writer.append(ords, sig.reshape(-1), np.arange(len(ords) + 1, dtype=np.int64) * num_perm)
        rows += len(ords)
        index += 1

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        # Two batches per worker in flight: the workers never wait on the writer.
        for result in ordered_map(pool, work, batches, ahead=2 * max(1, workers)):
            write(result)
    return PassOutput(
        docs_glob=str(workdir / "docs" / "*.parquet"),
        buckets_dir=workdir / "buckets",
        bucket_groups=sorted(d.name for d in (workdir / "buckets").iterdir() if d.is_dir()),
        samples=sample_writer.close() if sample_writer else None,
        sigs=sig_writer.close() if sig_writer else None,
        rows=rows,
    )


def _write_band_groups(rows: pa.Table, root: Path, index: int) -> None:
    """Split a batch's band rows by (rows per band, band // BANDS_PER_GROUP) into their directories."""
    group = rows.column("r").to_numpy().astype(np.int64) * 65536 + rows.column("band").to_numpy() // BANDS_PER_GROUP
    order = np.argsort(group, kind="stable")
    keys, starts = np.unique(group[order], return_index=True)
    for key, lo, hi in zip(keys, starts, np.append(starts[1:], len(order))):
        directory = root / f"r{key // 65536}-g{key % 65536:04d}"
        directory.mkdir(exist_ok=True)
        # Random 64-bit keys: compression and dictionaries only cost time.
        pq.write_table(rows.take(order[lo:hi]), directory / f"part-{index:06d}.parquet", compression="none",
                       use_dictionary=False)


def _head(sets: ShingleSets, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's first (smallest) m hashes as sample values: a consistent sample, exact below m."""
    sizes = sets.sizes
    if sizes.max(initial=0) <= m:
        return sample_values(sets.values), sets.offsets
    kept = np.minimum(sizes, m)
    values = sample_values(sets.values[ranges(sets.offsets[:-1], kept)])
    offsets = np.zeros(len(kept) + 1, np.int64)
    np.cumsum(kept, out=offsets[1:])
    return values, offsets
