"""Streaming summary of numeric score columns: count, mean, quantiles and a histogram.

Each column's finite values go to a float32 file under the fit's work directory as they stream
by, and are summarised from there in fixed memory (score_file.py), exactly as over all of them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from curate.errors import CurateError
from curate_operators.score.score_file import ScoreFile


class ScoreSummary:
    def __init__(self, columns: list[str], workdir: Path):
        self.columns = list(columns)
        self.files = {c: ScoreFile(Path(workdir) / f"score-{i}.f32") for i, c in enumerate(self.columns)}

    def add(self, batch: pa.RecordBatch) -> None:
        for c in self.columns:
            column = batch.column(c)
            if not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type) or pa.types.is_null(column.type)):
                raise CurateError(f"column '{c}' must be numeric to be summarised as a score, it is {column.type}")
            values = column.to_numpy(zero_copy_only=False).astype(np.float64)  # nulls become NaN
            self.files[c].append(values[np.isfinite(values)].astype(np.float32))

    def result(self) -> dict:
        """Each column's summary; its file is deleted once summarised."""
        out = {}
        for c, f in self.files.items():
            out[c] = f.describe()
            f.path.unlink(missing_ok=True)
        return out
