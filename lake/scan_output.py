"""The scan's output directory: what `scan` writes and what `plan` reads back.

  tables.parquet      every table of the graph: name, path, format, fingerprint, content hash
                      (tables in confirmed edges), bytes, rows
  graph.parquet       every schema-contained pair with the step that decided it and the evidence
  containment.json    the confirmed edges only (container, contained, column mapping, evidence)
  funnel.json         pairs considered, removed by each step, confirmed; seconds per step
  scan.json           roots, options, issues (unreadable, empty, mixed schemas), cache hits
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import asdict
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from curate.errors import CurateError

from .scan import ScanOptions, ScanResult


def _write_json(path: Path, obj) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(orjson.dumps(obj, option=orjson.OPT_INDENT_2, default=str))
    os.replace(tmp, path)


def _write_parquet(path: Path, table: pa.Table) -> None:
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def write_scan(out: str | Path, roots: list[str], options: ScanOptions, result: ScanResult) -> None:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t = result.tables
    _write_parquet(
        out / "tables.parquet",
        pa.table(
            {
                "name": [x.name for x in t],
                "path": [x.path for x in t],
                "format": [x.format for x in t],
                "partitioned": [x.partitioned for x in t],
                "fingerprint": [x.fingerprint for x in t],
                "content": pa.array(result.contents, pa.string()),
                "bytes": pa.array([x.bytes for x in t], pa.int64()),
                "rows": pa.array([s.rows for s in result.stats], pa.int64()),
                "columns": [[c.name for c in s.columns] for s in result.stats],
            }
        ),
    )
    edges = result.edges
    _write_parquet(
        out / "graph.parquet",
        pa.table(
            {
                "container": [t[e.container].name for e in edges],
                "contained": [t[e.contained].name for e in edges],
                "columns": [[b for b, _ in e.mapping] for e in edges],
                "container_columns": [[a for _, a in e.mapping] for e in edges],
                "stage": [e.stage for e in edges],
                "status": [e.status for e in edges],
                "evidence": [orjson.dumps(e.evidence).decode() for e in edges],
            },
            schema=pa.schema(
                [
                    ("container", pa.string()),
                    ("contained", pa.string()),
                    ("columns", pa.list_(pa.string())),
                    ("container_columns", pa.list_(pa.string())),
                    ("stage", pa.string()),
                    ("status", pa.string()),
                    ("evidence", pa.string()),
                ]
            ),
        ),
    )
    _write_json(
        out / "containment.json",
        [
            {
                "container": t[e.container].name,
                "contained": t[e.contained].name,
                "columns": dict(e.mapping),
                # column pairs with a CSV side: the type their values were compared as
                **({"compared_as": {c: how.family for c, how in e.compared.items()}} if e.compared else {}),
                "stage": e.stage,
                "status": e.status,
                "evidence": e.evidence,
            }
            for e in result.confirmed()
        ],
    )
    _write_json(out / "funnel.json", {**result.funnel, "seconds": result.seconds})
    opts = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(options).items() if k != "progress"}
    _write_json(
        out / "scan.json",
        {
            "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "roots": [str(Path(r).resolve()) for r in roots],
            "options": opts,
            "issues": result.issues,
            "cache_hits": result.cache_hits,
        },
    )


def load_scan(out: str | Path) -> tuple[list[dict], list[dict], dict]:
    """(tables, confirmed edges, scan.json) of a scan directory; a user error when it is not one."""
    out = Path(out)
    try:
        tables = pq.read_table(out / "tables.parquet").to_pylist()
        graph = pq.read_table(out / "graph.parquet", filters=[("status", "in", ["confirmed", "unverified"])])
        meta = orjson.loads((out / "scan.json").read_bytes())
    except (OSError, pa.ArrowException, orjson.JSONDecodeError) as e:
        raise CurateError(f"{out}: not a lake scan directory (run `curate lake scan ... -o {out}` first): {e}") from e
    edges = graph.to_pylist()
    for e in edges:
        e["evidence"] = orjson.loads(e["evidence"])
    return tables, edges, meta
