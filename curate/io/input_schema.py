"""The input's schema, decided from every file before any task reads a row.

A run's columns and their types must not depend on where a reader happens to look first: a
JSONL field that is a number for 300 lines and an object after, or an `id` that is an integer
in one file and a string in another, must reach the output whole, in shards that read as one
dataset, whatever the batch size, the file order or the number of workers. So the preflight
reads the schema of every file (the whole of a JSONL, CSV or WebDataset file; a Parquet footer,
an Arrow header) and merges them, field by field:

- types of one kind widen: integers of any width and floats to float64, string to large_string,
  structs to the union of their fields, lists to a list of their items' merged type, null to
  anything (a field null everywhere is a string);
- a field whose values are scalars of different kinds (a number here, a string there) is
  **text**: a number or boolean is written as its JSON text (`300`, `true`), a string is kept;
- a field that is an object or list in some rows and something else in others is **JSON
  text**: every value is its JSON encoding (a string quoted), so nothing is lost.

A field a step reads keeps the kind of type the steps were checked against (the first file's):
a value of another kind is one row in the trace, naming the file, line, field and both types
(`misfit`), never a wrong value passed on.

The decision is a `pa.Schema` whose mixed fields carry `MIXED` in their metadata; it travels
with the plan to every task (serialised) and each reader conforms what it reads to it.
"""

from __future__ import annotations

import orjson
import pyarrow as pa

MIXED = b"curate.mixed"  # field metadata: b"text" or b"json" (how the field's values were written)
FIRST = b"curate.first"  # a mixed field's metadata: the type of its first values (what a step reading it expects)
TEXT, JSON = "text", "json"


def mixed(field: pa.Field) -> str | None:
    """TEXT or JSON for a field carried as text, else None."""
    meta = field.metadata or {}
    return meta[MIXED].decode() if MIXED in meta else None


def _kind(t: pa.DataType) -> str:
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "number"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if (
        pa.types.is_struct(t)
        or pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_map(t)
        or pa.types.is_fixed_size_list(t)
    ):
        return "nested"
    return str(t)


def widen(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """The one type both `a` and `b` values fit without loss, or None when their kinds differ."""
    if a == b:
        return a
    if pa.types.is_null(a):
        return b
    if pa.types.is_null(b):
        return a
    if pa.types.is_integer(a) and pa.types.is_integer(b):
        return pa.int64()
    if _kind(a) == _kind(b) == "number" and not (pa.types.is_decimal(a) or pa.types.is_decimal(b)):
        return pa.float64()
    if _kind(a) == _kind(b) == "string":
        return pa.large_string()
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        fields = {f.name: f.type for f in a}
        for f in b:
            fields[f.name] = widen(fields[f.name], f.type) if f.name in fields else f.type
            if fields[f.name] is None:
                return None
        return pa.struct(list(fields.items()))
    if pa.types.is_list(a) and pa.types.is_list(b):
        item = widen(a.value_type, b.value_type)
        return None if item is None else pa.list_(item)
    if (pa.types.is_large_list(a) or pa.types.is_list(a)) and (pa.types.is_large_list(b) or pa.types.is_list(b)):
        item = widen(a.value_type, b.value_type)
        return None if item is None else pa.large_list(item)
    return None


def _nested(t: pa.DataType) -> bool:
    return _kind(t) == "nested"


class Merge:
    """Schemas merged field by field, in the order fields first appear."""

    def __init__(self) -> None:
        self.types: dict[str, pa.DataType] = {}
        self.modes: dict[str, str] = {}  # fields whose kinds differ: TEXT or JSON
        self.first: dict[str, pa.DataType] = {}  # a field's first type that says something (not null)

    def add(self, schema: pa.Schema | None) -> "Merge":
        for f in schema or ():
            self.add_field(f.name, first_type(f) or f.type, mixed(f))
        return self

    def add_field(self, name: str, type_: pa.DataType, mode: str | None = None) -> None:
        if name not in self.first and not pa.types.is_null(type_):
            self.first[name] = type_
        if mode is not None:  # mixed in one file already: JSON if any file has objects or lists there
            nested = mode == JSON or _nested(type_) or (name in self.types and _nested(self.types[name]))
            self._mix(name, JSON if nested else TEXT)
            return
        if name not in self.types:
            self.types[name] = type_
            return
        if name in self.modes:
            self._mix(name, JSON if _nested(type_) else TEXT)
            return
        wide = widen(self.types[name], type_)
        if wide is None:
            self._mix(name, JSON if _nested(type_) or _nested(self.types[name]) else TEXT)
        else:
            self.types[name] = wide

    def _mix(self, name: str, mode: str) -> None:
        if self.modes.get(name) != JSON:
            self.modes[name] = mode
        self.types.setdefault(name, pa.string())

    def schema(self, keep_null: bool = False) -> pa.Schema:
        """The merged schema; a field null everywhere is text, unless `keep_null` (one file's
        schema, merged later with the others': another file may say what the field is)."""
        fields = []
        for name, type_ in self.types.items():
            if name in self.modes:
                meta = {MIXED: self.modes[name].encode()}
                if name in self.first:
                    meta[FIRST] = str(self.first[name]).encode()
                fields.append(pa.field(name, pa.string(), metadata=meta))
            else:
                null_as_text = pa.types.is_null(type_) and not keep_null
                fields.append(pa.field(name, pa.string() if null_as_text else type_))
        return pa.schema(fields)


def merge(schemas) -> pa.Schema:
    merged = Merge()
    for schema in schemas:
        merged.add(schema)
    return merged.schema()


def first_type(field: pa.Field) -> pa.DataType | None:
    """A mixed field's first type, where it is a type named by an alias (int64, double, string, ...)."""
    name = (field.metadata or {}).get(FIRST)
    if name is None:
        return None
    try:
        return pa.type_for_alias(name.decode())
    except ValueError:
        return None


def pin(decided: pa.Schema, pinned: dict[str, pa.DataType]) -> pa.Schema:
    """`decided` with the fields a step reads set to their `pinned` type (as the steps were
    checked against), widened by what every file gives of the same kind."""
    fields = []
    for f in decided:
        if f.name in pinned:
            wide = None if mixed(f) else widen(pinned[f.name], f.type)
            fields.append(pa.field(f.name, wide if wide is not None else pinned[f.name]))
        else:
            fields.append(f)
    return pa.schema(fields)


def as_text(value, mode: str):
    """A value of a mixed field as the text it is carried as (None stays None)."""
    if value is None or (mode == TEXT and isinstance(value, str)):
        return value
    return orjson.dumps(value, default=str).decode()


def value_kind(value) -> str:
    """A JSON value's kind, as a message names it."""
    return {bool: "boolean", int: "integer", float: "number", str: "string", dict: "object", list: "array"}.get(
        type(value), type(value).__name__
    )


def misfit(value, type_: pa.DataType) -> str | None:
    """Why a Python (JSON) value cannot be a `type_` value, or None when it can."""
    if value is None:
        return None
    try:
        pa.array([value], type_)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError, ValueError):
        return f"is {value_kind(value)} {_short(value)}, but {type_} in the input's schema"
    return None


def _short(value) -> str:
    text = orjson.dumps(value, default=str).decode()
    return text if len(text) <= 40 else text[:37] + "..."


def conform_column(column: pa.Array | pa.ChunkedArray, field: pa.Field) -> tuple[pa.Array, list[int], list[str]]:
    """`column` as `field` says: cast, or carried as text; with the rows whose value cannot be
    cast (their positions, and why), which are null in the result."""
    mode = mixed(field)
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if mode is not None:
        if pa.types.is_string(column.type) and mode == TEXT:
            return column, [], []
        return pa.array([as_text(v, mode) for v in column.to_pylist()], pa.string()), [], []
    if column.type == field.type:
        return column, [], []
    try:
        return column.cast(field.type), [], []
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        pass
    values, rows, why = column.to_pylist(), [], []
    for i, value in enumerate(values):
        problem = misfit(value, field.type)
        if problem is not None:
            rows.append(i)
            why.append(f"field '{field.name}' {problem} (the file has it as {column.type})")
            values[i] = None
    return pa.array(values, field.type), rows, why


def conform(batch: pa.RecordBatch, decided: pa.Schema) -> tuple[pa.RecordBatch, dict[int, str]]:
    """`batch` in the decided columns (those it lacks are null; its own others kept after them),
    and the rows a value of which cannot take its decided type: {row: why}. Those rows are
    still in the batch; the caller takes them out."""
    arrays, fields = [], []
    bad: dict[int, str] = {}
    for f in decided:
        if f.name in batch.schema.names:
            array, rows, why = conform_column(batch.column(f.name), f)
            for row, reason in zip(rows, why):
                bad.setdefault(row, reason)
        else:
            array = pa.nulls(batch.num_rows, f.type)
        arrays.append(array)
        fields.append(f)
    for name in batch.schema.names:
        if name not in decided.names:
            arrays.append(batch.column(name))
            fields.append(batch.schema.field(name))
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields)), bad


def serialize(schema: pa.Schema | None) -> bytes | None:
    return None if schema is None else schema.serialize().to_pybytes()


def deserialize(data: bytes | None) -> pa.Schema | None:
    return None if data is None else pa.ipc.read_schema(pa.py_buffer(data))
