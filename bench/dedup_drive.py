"""Drive a dedup Global operator over a Parquet corpus directly (fit over batches, then apply).

Returns the removed ids with their trace details; used by the quality and speed benches.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def batches(data: Path, batch_rows: int = 8192, columns=("id", "text")):
    """File by file, batch by batch, as the engine feeds a Global's fit (no read-ahead: a
    dataset scanner decodes several files ahead, which would count in the operator's memory)."""
    ord0 = 0
    for path in sorted(Path(data).glob("*.parquet")):
        for b in pq.ParquetFile(path).iter_batches(batch_size=batch_rows, columns=list(columns)):
            n = b.num_rows
            yield pa.record_batch(
                [b.column("id"), b.column("text"), pa.array(np.arange(ord0, ord0 + n, dtype=np.int64))],
                names=["_id", "text", "_ord"],
            )
            ord0 += n


def removed(op, data: Path, workdir: Path | None = None) -> dict[str, str]:
    """{_id: detail} of the rows the operator removes."""
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        state = op.fit(batches(data, columns=("id", "text")), Path(tmp))
        out: dict[str, str] = {}
        for b in batches(data, columns=("id", "text")):
            v = op.apply(b, state)
            gone = np.flatnonzero(~v.keep)
            ids = b.column("_id").take(pa.array(gone)).to_pylist()
            details = v.detail.take(pa.array(gone)).to_pylist() if v.detail is not None else [None] * len(gone)
            out.update(zip(ids, details))
        return out
