"""A batch's columns: text columns read with their type checked, and columns set whether or not
the batch has them yet. Shared by the operators and the readers."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from curate.errors import InputError


def text_array(batch: pa.RecordBatch, column: str, step: str) -> pa.Array:
    """The column, of type string or large_string; any other type is an error naming the step.
    A string_view column comes as large_string, since most Arrow string kernels lack string_view."""
    values = batch.column(column)
    if pa.types.is_string_view(values.type):
        return values.cast(pa.large_string())
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        raise InputError(f"{step}: column '{column}' must be text, it is {values.type}")
    return values


def text_values(batch: pa.RecordBatch, column: str, step: str) -> list[str]:
    """The column's values as Python strings (a null is the empty string)."""
    return text_array(batch, column, step).fill_null("").to_pylist()


def put(batch: pa.RecordBatch, name: str, values, type_: pa.DataType = pa.float64()) -> pa.RecordBatch:
    """`batch` with column `name` set to `values` (an Arrow array, or values of `type_`): replaced
    where the batch has it already (an earlier step wrote it), else appended."""
    column = values if isinstance(values, pa.Array) else pa.array(values, type_)
    at = batch.schema.get_field_index(name)
    return batch.set_column(at, name, column) if at >= 0 else batch.append_column(name, column)


def with_nulls(values: np.ndarray, valid: np.ndarray) -> pa.Array:
    """`values` as float64, null where not `valid` (a measurement that came out NaN or infinite)."""
    return pa.array(values, pa.float64(), mask=~valid)
