"""From a scan directory to a deletion plan file (JSON), and back.

The plan records, for each table to delete, everything apply needs to check that
nothing changed since the scan: both tables' paths, fingerprints and content hashes, and the
column mapping.
"""

from __future__ import annotations

import csv
import datetime as dt
import os
from pathlib import Path

import orjson

from curate.errors import CurateError

from .planner import DELETABLE_FORMATS, PlanInput, rebuild_seconds, solve
from .scan_output import load_scan


def load_frequencies(path: str | Path, names: list[str]) -> list[float]:
    """Access frequency per table from a CSV (columns table,frequency) or JSON ({table: f} or [{table, frequency}])."""
    path = Path(path)
    try:
        if path.suffix.lower() == ".json":
            data = orjson.loads(path.read_bytes())
            rows = data.items() if isinstance(data, dict) else [(d["table"], d["frequency"]) for d in data]
        else:
            with open(path, newline="") as f:
                rows = [(r["table"], r["frequency"]) for r in csv.DictReader(f)]
        freq = {str(k): float(v) for k, v in rows}
    except (OSError, KeyError, TypeError, ValueError, orjson.JSONDecodeError) as e:
        raise CurateError(
            f"{path}: cannot read access frequencies ({e}); expected CSV columns table,frequency or JSON {{table: frequency}}"
        ) from e
    unknown = sorted(set(freq) - set(names))
    if unknown:
        raise CurateError(f"{path}: unknown table names {unknown[:5]}{' ...' if len(unknown) > 5 else ''} (not in the scan)")
    if any(f < 0 for f in freq.values()):
        raise CurateError(f"{path}: access frequencies must be >= 0")
    return [freq.get(n, 1.0) for n in names]


def make_plan(
    scan_dir: str | Path,
    *,
    access: str | Path | None = None,
    latency: float = float("inf"),
    lam: float = 1e6,
    scan_rate_mb_s: float = 200.0,
    method: str = "auto",
    max_exact: int = 3000,
) -> dict:
    tables, edges, meta = load_scan(scan_dir)
    names = [t["name"] for t in tables]
    index = {n: k for k, n in enumerate(names)}
    inp = PlanInput(
        names=names,
        bytes=[t["bytes"] for t in tables],
        formats=[t["format"] for t in tables],
        frequency=load_frequencies(access, names) if access else [1.0] * len(names),
        edges=[(index[e["container"]], index[e["contained"]]) for e in edges if e["status"] == "confirmed"],
        latency_bound=latency,
        lam=lam,
        scan_rate=scan_rate_mb_s * 1e6,
    )
    plan = solve(inp, method=method, max_exact=max_exact)
    mapping = {
        (e["container"], e["contained"]): dict(zip(e["columns"], e["container_columns"])) for e in edges
    }
    deletions = []
    for i, j in sorted(plan.deletions.items(), key=lambda kv: names[kv[0]]):
        b, a = tables[i], tables[j]
        deletions.append(
            {
                "table": b["name"],
                "path": b["path"],
                "format": b["format"],
                "partitioned": b["partitioned"],
                "fingerprint": b["fingerprint"],
                "content": b.get("content"),  # None from scans that did not record it
                "bytes": b["bytes"],
                "rows": b["rows"],
                "frequency": inp.frequency[i],
                "container": a["name"],
                "container_path": a["path"],
                "container_fingerprint": a["fingerprint"],
                "container_content": a.get("content"),
                "columns": mapping[(a["name"], b["name"])],
                "rebuild_seconds": rebuild_seconds(inp, j),
            }
        )
    unverified = sum(e["status"] == "unverified" for e in edges)
    return {
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "scan": str(Path(scan_dir).resolve()),
        "solver": plan.solver,
        "optimal": plan.optimal,
        "note": plan.note
        + (f"; {unverified} unverified edges (scan --no-verify) were not used" if unverified else ""),
        "lambda": lam,
        "latency_bound_s": None if latency == float("inf") else latency,
        "scan_rate_mb_s": scan_rate_mb_s,
        "tables": len(tables),
        "deletable_formats": list(DELETABLE_FORMATS),
        "bytes_total": sum(inp.bytes),
        "bytes_saved": sum(d["bytes"] for d in deletions),
        "objective": plan.objective,
        "deletions": deletions,
    }


def write_plan(plan: dict, path: str | Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(orjson.dumps(plan, option=orjson.OPT_INDENT_2))
    os.replace(tmp, path)


def read_plan(path: str | Path) -> dict:
    try:
        plan = orjson.loads(Path(path).read_bytes())
    except (OSError, orjson.JSONDecodeError) as e:
        raise CurateError(f"{path}: not a readable lake plan ({e})") from e
    if not isinstance(plan, dict) or not isinstance(plan.get("deletions"), list):
        raise CurateError(f"{path}: not a lake plan (no list of deletions); make one with `curate lake plan`")
    return plan
