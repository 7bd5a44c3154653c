"""Input rows that repeat an `input.id_column` value with different content: counted for the
manifest (`duplicate_ids`), a warning by default, a failed run with `input.on_duplicate_id: fail`.

A row is summarised by two 64-bit hashes, of its id and of its content (every column but
`_id`), so the check costs 16 bytes a row and no second pass over the input. Rows repeating an
id with the same content (a file listed twice, say) are not counted: they are duplicates, for
the dedup steps to remove, not a conflict of ids.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from curate.errors import CurateError
from curate.observers import RunObserver
from curate.words import count

_SEED = 0x5EED  # fixed: hashes are compared across tasks and resumed runs


class _IdHashes:
    def __init__(self) -> None:
        self.parts: list[np.ndarray] = []  # (n, 2) uint64: id hash, content hash

    def observe(self, batch: pa.RecordBatch) -> None:
        import polars as pl  # here, not at the top: every run and worker imports this module

        frame = pl.from_arrow(batch)
        assert isinstance(frame, pl.DataFrame)  # what a RecordBatch gives
        content = frame.drop("_id").hash_rows(_SEED) if frame.width > 1 else pl.Series(np.zeros(len(frame), np.uint64))
        ids = frame.get_column("_id").hash(_SEED)
        self.parts.append(np.column_stack([ids.to_numpy(), content.to_numpy()]).astype(np.uint64))

    def merge(self, other: "_IdHashes") -> None:
        self.parts.extend(other.parts)


class DuplicateIds(RunObserver):
    key = "duplicate_ids"
    sides = ("input",)

    def __init__(self, id_column: str, fail: bool):
        self.id_column = id_column
        self.fail = fail

    @classmethod
    def for_recipe(cls, recipe) -> "DuplicateIds | None":
        spec = recipe.input
        return cls(spec.id_column, spec.on_duplicate_id == "fail") if spec.id_column else None

    def summary(self, side: str) -> _IdHashes:
        return _IdHashes()

    def finish(self, merged: dict, map) -> dict | None:
        pairs = np.concatenate(merged["input"].parts) if merged["input"].parts else np.zeros((0, 2), np.uint64)
        sorted_ids = np.sort(pairs[:, 0])
        repeated = np.unique(sorted_ids[1:][sorted_ids[1:] == sorted_ids[:-1]])
        if not len(repeated):  # the usual case, settled by one sort of the ids (a run's serial tail)
            return None
        pairs = pairs[np.isin(pairs[:, 0], repeated)]  # the rows of repeated ids only
        distinct = np.unique(pairs, axis=0)  # one row per (id, content)
        ids, rows_of = np.unique(distinct[:, 0], return_counts=True)
        conflicting = ids[rows_of > 1]
        if not len(conflicting):
            return None
        rows = int(np.isin(pairs[:, 0], conflicting).sum())
        message = (
            f"{count(len(conflicting), 'value')} of input.id_column '{self.id_column}' repeat with "
            f"different content ({count(rows, 'row')}); ids no longer name one document each"
        )
        if self.fail:
            raise CurateError(
                f"{message} (input.on_duplicate_id: fail). Make the ids unique, or set "
                f"input.on_duplicate_id: warn to continue with a warning"
            )
        return {"ids": len(conflicting), "rows": rows, "message": message}
