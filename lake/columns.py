"""When two columns of different tables are "the same column": name after normalization
and a compatible type family (int32 ~ int64, string ~ large_string, timestamp units)."""

from __future__ import annotations

import re

import pyarrow as pa
import pyarrow.types as pt

_NON_WORD = re.compile(r"[^0-9a-z]+")


def normalize_name(name: str) -> str:
    """Case, surrounding space and punctuation do not distinguish columns: 'User ID' == 'user_id'.
    Leading underscores do: they mark internal columns (curate's `_id` beside a table's own
    `id`, pandas' `__index_level_0__`), which are other columns than their plain namesakes."""
    name = name.strip()
    body = name.lstrip("_")
    return "_" * (len(name) - len(body)) + _NON_WORD.sub("_", body.lower()).strip("_")


def type_family(t: pa.DataType) -> str:
    """Types in one family hold comparable values; a table may widen within a family."""
    if pt.is_dictionary(t):
        return type_family(t.value_type)
    if pt.is_integer(t):
        return "int"
    if pt.is_floating(t):
        return "float"
    if pt.is_string(t) or pt.is_large_string(t) or pt.is_string_view(t):
        return "string"
    if pt.is_binary(t) or pt.is_large_binary(t) or pt.is_binary_view(t) or pt.is_fixed_size_binary(t):
        return "binary"
    if pt.is_boolean(t):
        return "bool"
    if pt.is_date(t):
        return "date"
    if pt.is_timestamp(t):
        return f"timestamp[{t.tz}]" if t.tz else "timestamp"
    if pt.is_time(t):
        return "time"
    if pt.is_decimal(t):
        return "decimal"
    return str(t)


def column_key(name: str, t: pa.DataType) -> tuple[str, str]:
    """The identity of a column across tables: (normalized name, type family)."""
    return normalize_name(name), type_family(t)
