"""Setting score columns on a batch, and checking the text columns an operator reads."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from curate.errors import InputError


def put(batch: pa.RecordBatch, name: str, values, type_=pa.float64()) -> pa.RecordBatch:
    """`batch` with column `name` set to `values` (replaced if already there)."""
    column = values if isinstance(values, pa.Array) else pa.array(values, type_)
    at = batch.schema.get_field_index(name)
    return batch.set_column(at, name, column) if at >= 0 else batch.append_column(name, column)


def text(batch: pa.RecordBatch, column: str, step: str) -> pa.Array:
    values = batch.column(column)
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)
            or pa.types.is_string_view(values.type)):
        raise InputError(f"{step}: column '{column}' must be text, it is {values.type}")
    return values


def with_nulls(values: np.ndarray, valid: np.ndarray) -> pa.Array:
    return pa.array(values, pa.float64(), mask=~valid)
