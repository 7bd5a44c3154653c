"""Arrow row layouts of ADP data in a curate pipeline.

Trajectory rows (output of `adp_convert`, input of `adp_validate` and `adp_export`):
    id       string   the trajectory id
    content  string   the events as a JSON array (ADP event objects, in order)
    details  string   the dataset-specific details as a JSON object of strings
Keeping events as one JSON string keeps every dataset in one flat schema (events differ per
class) and makes exact dedup of trajectories a plain string comparison on `content`.

SFT rows (output of `adp_export`):
    id             string
    system         string                                  the target framework's system prompt
    conversations  list<struct<from: string, value: string>>   OpenHands and SWE-agent styles
                   list<struct<role: string, content: string>> AgentLab style

Raw records (input of `adp_join` and `adp_convert`): a row's own columns, or one column holding
each record as a JSON string (`raw_column`). For per-step sources, `adp_join` puts a trajectory's
records on the row of its first step as the JSON array JOINED.

content and details carry the field metadata JSON_TEXT (curate/io/output_formats.py): in JSON
lines output (`--format jsonl`) they are written nested, content a list and details an object,
as the ADP releases' std files have them; Parquet output keeps them as JSON text. Readers
(`adp validate`, `adp export`, the `adp` source) accept both forms.
"""

from __future__ import annotations

from typing import Any

import orjson
import pyarrow as pa

from curate.io.output_formats import JSON_TEXT

JOINED = "_adp_records"

_NESTED = {JSON_TEXT: b"nested"}
TRAJECTORY_SCHEMA = pa.schema([("id", pa.string()), pa.field("content", pa.string(), metadata=_NESTED),
                               pa.field("details", pa.string(), metadata=_NESTED)])
SHAREGPT_TURN = pa.struct([("from", pa.string()), ("value", pa.string())])
CHAT_TURN = pa.struct([("role", pa.string()), ("content", pa.string())])


def sft_schema(style: str) -> pa.Schema:
    turn = CHAT_TURN if style == "agentlab" else SHAREGPT_TURN
    return pa.schema([("id", pa.string()), ("system", pa.string()), ("conversations", pa.list_(turn))])


def trajectory_row(traj: dict) -> dict:
    """A trajectory dict in the Arrow layout (JSON-string content and details)."""
    return {"id": traj["id"], "content": orjson.dumps(traj["content"]).decode(),
            "details": orjson.dumps(traj.get("details") or {}).decode()}


def _loads(value: Any, what: str) -> Any:
    if isinstance(value, (str, bytes)):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError as e:
            raise ValueError(f"{what} is not valid JSON ({e})") from None
    return value


def trajectory_doc(row: dict) -> dict:
    """A trajectory from either layout (JSON strings or nested values), as plain dicts."""
    doc = {k: v for k, v in row.items() if not k.startswith("_")}
    if "content" in doc:
        doc["content"] = _loads(doc["content"], "content")
    if "details" in doc:
        doc["details"] = _loads(doc["details"], "details") if doc["details"] is not None else {}
    return doc


def raw_records(batch: pa.RecordBatch, raw_column: str | None) -> list:
    """The batch's raw records: parsed from `raw_column` (a ValueError in place of one that is
    not JSON), else each row's public columns as a dict."""
    if raw_column:
        out = []
        for raw in batch.column(raw_column).to_pylist():
            try:
                out.append(orjson.loads(raw) if isinstance(raw, (str, bytes)) else raw)
            except orjson.JSONDecodeError as e:
                out.append(ValueError(f"{raw_column} is not valid JSON ({e})"))
        return out
    return batch.select([n for n in batch.schema.names if not n.startswith("_")]).to_pylist()
