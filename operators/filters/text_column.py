"""What the per-document text filters share: the text column as Python strings, and score columns."""

from __future__ import annotations

import pyarrow as pa

from curate.errors import InputError


def text_values(batch: pa.RecordBatch, column: str, operator: str) -> list[str]:
    """The column's values as strings (a null is the empty string); a non-text column is an error."""
    values = batch.column(column)
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)
            or pa.types.is_string_view(values.type)):
        raise InputError(f"{operator}: column '{column}' must be text, it is {values.type}")
    return [t if t is not None else "" for t in values.to_pylist()]


def with_scores(batch: pa.RecordBatch, scores: dict[str, pa.Array]) -> pa.RecordBatch:
    """The batch with each score column added, or replaced where a column of that name exists."""
    for name, column in scores.items():
        at = batch.schema.get_field_index(name)
        batch = batch.set_column(at, name, column) if at >= 0 else batch.append_column(name, column)
    return batch
