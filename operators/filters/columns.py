"""select, rename and cast: column bookkeeping as Map steps. Internal `_` columns always pass."""

from __future__ import annotations

import pyarrow as pa
from pydantic import Field, field_validator

from curate.errors import CurateError
from curate.ops import Map, Params, reads_column


class SelectParams(Params):
    columns: list[str] = reads_column(description="Columns to keep, in this order (internal `_` columns are kept too).")


class Select(Map):
    """Keep only the listed columns, in that order."""

    name = "select"
    Params = SelectParams

    def _kept(self, names: list[str]) -> list[str]:
        return list(self.params.columns) + [n for n in names if n.startswith("_") and n not in self.params.columns]

    def output_schema(self, schema: pa.Schema) -> pa.Schema:
        return pa.schema([schema.field(n) for n in self._kept(schema.names)])

    def process(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        return batch.select(self._kept(batch.schema.names))


class RenameParams(Params):
    columns: dict[str, str] = reads_column(description="Old name -> new name.")


class Rename(Map):
    """Rename columns."""

    name = "rename"
    Params = RenameParams

    def computed_provides(self) -> tuple[str, ...]:
        return tuple(self.params.columns.values())

    def output_schema(self, schema: pa.Schema) -> pa.Schema:
        return pa.schema([f.with_name(self.params.columns.get(f.name, f.name)) for f in schema])

    def process(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        return batch.rename_columns([self.params.columns.get(n, n) for n in batch.schema.names])


def _arrow_type(name: str) -> pa.DataType:
    try:
        return pa.type_for_alias(name)
    except ValueError:
        raise ValueError(f"unknown Arrow type '{name}' (e.g. int64, float32, string, bool, timestamp[ms])") from None


class CastParams(Params):
    columns: dict[str, str] = reads_column(description="Column -> Arrow type name (int64, float32, string, bool, ...).")
    safe: bool = Field(True, description="Fail on lossy casts (overflow, truncation) instead of wrapping.")

    @field_validator("columns")
    @classmethod
    def known_types(cls, v: dict[str, str]) -> dict[str, str]:
        for t in v.values():
            _arrow_type(t)
        return v


class Cast(Map):
    """Cast columns to Arrow types."""

    name = "cast"
    Params = CastParams

    def __init__(self, params=None, **kw):
        super().__init__(params, **kw)
        self.types = {c: _arrow_type(t) for c, t in self.params.columns.items()}

    def output_schema(self, schema: pa.Schema) -> pa.Schema:
        return pa.schema([f.with_type(self.types.get(f.name, f.type)) for f in schema])

    def process(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        for name, to in self.types.items():
            i = batch.schema.get_field_index(name)
            try:
                batch = batch.set_column(i, name, batch.column(i).cast(to, safe=self.params.safe))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise CurateError(f"cast: column '{name}' to {to}: {e}") from None
        return batch
