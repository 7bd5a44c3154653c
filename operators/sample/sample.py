"""sample: keeps a seeded, deterministic fraction of rows, decided row by row from a hash.

A row stays when xxh3(its key, seed) / 2**64 < `fraction`, the key being `_id` (or another
column, e.g. a domain to keep or drop whole sites). The decision needs no other row, so it
streams, is the same on every run and resume with the same seed, and a smaller fraction keeps a
subset of what a larger one keeps (with the same seed).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import xxhash
from pydantic import Field

from curate.ops import Filter, Params, Verdict, reads_column


class SampleParams(Params):
    fraction: float = Field(gt=0, le=1, description="The share of rows to keep, in (0, 1].")
    by: str = reads_column("_id", "The column whose value decides (rows with equal values go together).")


def unit_hashes(values: list, seed: int) -> np.ndarray:
    """Each value's hash as a number in [0, 1); a null hashes like the empty string."""
    return np.fromiter((xxhash.xxh3_64_intdigest(b"" if v is None else str(v).encode(), seed) for v in values),
                       np.uint64, len(values)) / 2.0**64


class Sample(Filter):
    """Keeps about `fraction` of the rows, chosen by a seeded hash of `by`."""

    name = "sample"
    Params = SampleParams

    def keep(self, batch: pa.RecordBatch) -> Verdict:
        u = unit_hashes(batch.column(self.params.by).to_pylist(), self.seed)
        return Verdict(keep=u < self.params.fraction, reason="sampled_out",
                       detail=f"not in the {self.params.fraction:g} sample (seed {self.seed})")
