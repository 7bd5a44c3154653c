"""Pipeline operators: adp_convert (raw records -> ADP trajectory rows), adp_validate (drop rows
that break the ADP schema) and adp_export (trajectory rows -> SFT rows). Row layouts: see rows.py.

adp_convert and adp_export change the row count (see curate/ops.py, Map): their verdict is over
their input rows, so records that cannot be converted, per-step records merged into another's
trajectory and trajectories a style cannot render go to the trace with the reason
(`unconvertible`, `merged`, `invalid_adp`, `not_exportable`) and the message as detail.
"""

from __future__ import annotations

import numpy as np
import orjson
import pyarrow as pa
from pydantic import Field, field_validator

from curate.ops import Filter, Map, Params, Verdict, reads_column
from operators.agent import converters
from operators.agent.exporters import STYLES, Exporter, Skip
from operators.agent.rows import TRAJECTORY_SCHEMA, sft_schema, trajectory_doc, trajectory_row
from operators.agent.schema import TrajectoryError, validate_trajectory


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

    Per-step datasets (nnetnav) join consecutive records with the same id; in a pipeline the
    join happens within a batch, so a trajectory split across two batches comes out as two.
    `curate adp convert` joins across the whole stream.
    """

    name = "adp_convert"
    Params = AdpConvertParams
    changes_rows = True  # per-step datasets (nnetnav) merge several records into one trajectory
    provides = ("id", "content", "details")

    def __init__(self, params=None, **kw):
        super().__init__(params, **kw)
        self.converter = converters.get(self.params.source)

    def _records(self, batch: pa.RecordBatch) -> list:
        if self.params.raw_column:
            out = []
            for raw in batch.column(self.params.raw_column).to_pylist():
                try:
                    out.append(orjson.loads(raw) if isinstance(raw, (str, bytes)) else raw)
                except orjson.JSONDecodeError as e:
                    out.append(ValueError(f"{self.params.raw_column} is not valid JSON ({e})"))
            return out
        cols = [n for n in batch.schema.names if not n.startswith("_")]
        return batch.select(cols).to_pylist()

    def process(self, batch: pa.RecordBatch):
        ids = batch.column("_id").to_pylist()
        rows, parents = [], []
        keep = np.zeros(batch.num_rows, dtype=bool)
        reasons, details = [None] * batch.num_rows, [None] * batch.num_rows
        for unit in converters.iter_convert(self.converter, self._records(batch), fallback_ids=ids):
            first, *merged = unit.rows
            if unit.trajectory is None:
                for i in unit.rows:
                    reasons[i], details[i] = "unconvertible", unit.error
                continue
            keep[first] = True
            rows.append(trajectory_row(unit.trajectory))
            parents.append(ids[first])
            for i in merged:  # a per-step record joined into the trajectory of the group's first
                reasons[i], details[i] = "merged", f"joined into the trajectory of row {ids[first]}"
        body = pa.RecordBatch.from_pylist(rows, schema=TRAJECTORY_SCHEMA)
        out = pa.RecordBatch.from_arrays([pa.array(parents, pa.string()), *body.columns],
                                         names=["_parent_id", *TRAJECTORY_SCHEMA.names])
        return out, Verdict(keep, reasons, details)


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
        return out, Verdict(keep, "not_exportable", details)
