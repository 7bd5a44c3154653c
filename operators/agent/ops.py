"""Pipeline operators: adp_convert (raw records -> ADP trajectory rows), adp_validate (drop rows
that break the ADP schema) and adp_export (trajectory rows -> SFT rows). Row layouts: see rows.py.
Per-step sources (nnetnav) have adp_join (join.py) before adp_convert.

adp_convert and adp_export change the row count (see curate/ops.py, Map): their verdict is over
their input rows, so records that cannot be converted and trajectories a style cannot render go
to the trace with the reason (`unconvertible`, `invalid_adp`, `not_exportable`) and the message
as detail.
"""

from __future__ import annotations

import re

import numpy as np
import orjson
import pyarrow as pa
from pydantic import Field, field_validator

from curate.errors import RecipeError
from curate.ops import Filter, Map, Params, Result, Verdict, reads_column
from curate_operators.agent import converters
from curate_operators.agent.exporters import STYLES, Exporter, Skip
from curate_operators.agent.rows import JOINED, TRAJECTORY_SCHEMA, raw_records, sft_schema, trajectory_doc, trajectory_row
from curate_operators.agent.schema import TrajectoryError, validate_trajectory


class AdpConvertParams(Params):
    source: str = Field(description="Source dataset converter, e.g. agenttuning_os, swe-smith, openai_chat, sharegpt.")
    raw_column: str | None = reads_column(None, "Column holding each raw record as a JSON string; "
                                                "default: the row's own columns are the record.")

    @field_validator("source")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in converters.CONVERTERS:
            raise ValueError(f"unknown ADP source {v!r}; known sources: {', '.join(converters.names())}")
        return v


class AdpConvert(Map):
    """Raw dataset records -> ADP trajectory rows `id, content, details` (plus `_id`).

    Per-step sources (nnetnav) convert the records adp_join put on the row of a trajectory's
    first step (JOINED): joined across the whole input, not within a batch, so the output does
    not depend on where batches are cut.

    A record without an id of its own (Synatra's) is named by its position in its file (`0`,
    `1`, ...), as the converter and the ADP reference name it; records of several input files
    may then share ids (set input.id_column to name them otherwise).
    """

    name = "adp_convert"
    Params = AdpConvertParams
    # Trajectory rows are new rows (children of the records they came from, `<_id>#0`), so a
    # record that does not convert is traced as it was read.
    changes_rows = True
    provides = ("id", "content", "details")

    def __init__(self, params=None, **kw):
        super().__init__(params, **kw)
        self.converter = converters.get(self.params.source)

    def check_schema(self, schema: pa.Schema) -> None:
        if self.converter.group_by and JOINED not in schema.names:
            p = self.params
            join = f"source: {p.source}" + (f", raw_column: {p.raw_column}" if p.raw_column else "")
            raise RecipeError("source", f"{p.source} has one record per step: put `- adp_join: {{{join}}}` before "
                                        "this step (it joins each trajectory's steps across the whole input)")

    def _units(self, batch: pa.RecordBatch, ids: list[str]):
        ids = [_position(i) for i in ids]
        if self.converter.group_by is None:
            return converters.iter_convert(self.converter, raw_records(batch, self.params.raw_column),
                                           fallback_ids=ids)
        return (converters.Converted([i], *converters.convert_unit(self.converter, orjson.loads(joined), ids[i]))
                for i, joined in enumerate(batch.column(JOINED).to_pylist()))

    def process(self, batch: pa.RecordBatch):
        ids = batch.column("_id").to_pylist()
        rows, parents = [], []
        keep, details = np.zeros(batch.num_rows, dtype=bool), [None] * batch.num_rows
        for unit in self._units(batch, ids):
            (i,) = unit.rows  # one record, or one trajectory's joined records
            if unit.error is not None:
                details[i] = unit.error
                continue
            keep[i] = True
            rows += [trajectory_row(t) for t in unit.trajectories]  # several for a record holding several
            parents += [ids[i]] * len(unit.trajectories)
        body = pa.RecordBatch.from_pylist(rows, schema=TRAJECTORY_SCHEMA)
        out = pa.RecordBatch.from_arrays([pa.array(parents, pa.string()), *body.columns],
                                         schema=pa.schema([("_parent_id", pa.string()), *TRAJECTORY_SCHEMA]))
        return Result(out, Verdict(keep, "unconvertible", details))


# A row id the reader made (readers._add_id: a hash of the file's name, then the row's position in it).
_READ_ID = re.compile(r"^[0-9a-f]{12}:(\d+)$")


def _position(row_id: str) -> str:
    """The fallback id of a record: its position in its file where `row_id` is the reader's, else `row_id`."""
    m = _READ_ID.match(row_id)
    return m[1] if m else row_id


class AdpValidate(Filter):
    """Keep trajectory rows that follow the ADP schema; the others go to the trace with the error."""

    name = "adp_validate"
    requires = ("id", "content", "details")

    def keep(self, batch: pa.RecordBatch) -> Verdict:
        keep, details = np.ones(batch.num_rows, dtype=bool), [None] * batch.num_rows
        for i, row in enumerate(batch.select(list(self.requires)).to_pylist()):
            message = validation_error(row)
            if message:
                keep[i], details[i] = False, message
        return Verdict(keep, "invalid_adp", details)


def validation_error(row: dict) -> str | None:
    """None when the row is a valid ADP trajectory, else the located error message."""
    try:
        validate_trajectory(trajectory_doc(row))
    except TrajectoryError as e:
        return str(e)
    except ValueError as e:
        return f"trajectory {row.get('id')!r}: {e}"
    return None


class AdpExportParams(Params):
    style: str = Field(description=f"Target SFT style: {', '.join(sorted(STYLES))}.")
    system_prompt: str | None = Field(None, description="File with the system prompt; default: ours for the style.")
    environment: str | None = Field(None, description="API environment: a shipped name (usually the source "
                                                      "dataset) or a JSON file; gives the API docs and web flag.")
    web: bool | None = Field(None, description="Treat the data as web browsing (default: from the environment).")

    @field_validator("style")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in STYLES:
            raise ValueError(f"unknown SFT style {v!r}; known styles: {', '.join(sorted(STYLES))}")
        return v


class AdpExport(Map):
    """Trajectory rows -> SFT rows `id, system, conversations` (AgentLab: one row per action)."""

    name = "adp_export"
    Params = AdpExportParams
    changes_rows = True
    requires = ("id", "content", "details")
    provides = ("id", "system", "conversations")

    def __init__(self, params=None, **kw):
        super().__init__(params, **kw)
        p = self.params
        self.exporter = Exporter(p.style, system_prompt=p.system_prompt, environment=p.environment, web=p.web)
        self.schema = sft_schema(p.style)

    def process(self, batch: pa.RecordBatch):
        ids = batch.column("_id").to_pylist()
        rows, parents = [], []
        keep, details = np.zeros(batch.num_rows, dtype=bool), [None] * batch.num_rows
        for i, (row_id, row) in enumerate(zip(ids, batch.select(list(self.requires)).to_pylist())):
            try:
                records = self.exporter.export(trajectory_doc(row))
                if not records:
                    raise Skip("no sample to export")
            except (Skip, ValueError, KeyError, TypeError) as e:
                details[i] = str(e) if isinstance(e, Skip) else f"{type(e).__name__}: {e}"
                continue
            keep[i] = True
            rows.extend(records)
            parents.extend([row_id] * len(records))
        body = pa.RecordBatch.from_pylist(rows, schema=self.schema)
        out = pa.RecordBatch.from_arrays([pa.array(parents, pa.string()), *body.columns],
                                         names=["_parent_id", *self.schema.names])
        return Result(out, Verdict(keep, "not_exportable", details))
