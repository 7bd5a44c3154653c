"""The lake scan: discovery, statistics, then the four steps of the R2D2 pipeline.

Each step only removes candidate edges; verification confirms. The verdicts of the two
expensive steps are cached by both tables' fingerprints, so a rescan of an unchanged lake
only lists files and replays the cheap steps.
"""

from __future__ import annotations

import time
from collections import defaultdict
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .columns import normalize_name
from .content import check_contained
from .edges import STAGES, Edge
from .minmax import prune_minmax
from .reader import TableReadError
from .schema_index import schema_candidates
from .stats import TableStats, compute_stats
from .stats_cache import ScanCache
from .tables import Table, discover
from .verify import verify_edge


@dataclass
class ScanOptions:
    sample: int = 1000
    seed: int = 0
    verify: bool = True
    threads: int | None = None
    cache: Path | None = None  # default: <out>/stats_cache.json
    progress: bool = True


@dataclass
class ScanResult:
    tables: list[Table]  # readable, non-empty tables: the vertices of the graph
    stats: list[TableStats]
    edges: list[Edge]
    issues: list[dict]
    funnel: dict
    seconds: dict = field(default_factory=dict)
    cache_hits: int = 0
    # per table: the content hash of a table in a confirmed edge (what apply and restore compare
    # with later; see tables.same_data), None for the others, which no plan can name
    contents: list[str | None] = field(default_factory=list)

    def confirmed(self) -> list[Edge]:
        return [e for e in self.edges if e.status in ("confirmed", "unverified")]


def _progress(enabled: bool):
    if not enabled:
        return nullcontext(None)
    return Progress(
        TextColumn("{task.description:<28}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
    )


class _Steps:
    """One progress bar per step (or none), and the seconds each step took."""

    def __init__(self, progress):
        self.progress = progress
        self.seconds: dict[str, float] = {}

    def run(self, name: str, items, total: int | None = None):
        task = self.progress.add_task(name, total=total if total is not None else len(items)) if self.progress else None
        start = time.perf_counter()
        for item in items:
            yield item
            if task is not None:
                self.progress.advance(task)
        self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start

    @contextmanager
    def whole(self, name: str):
        """A step done in one bulk operation: a bar that fills when it ends."""
        for _ in self.run(name, [None]):
            yield


def _table_stats(t: Table, cache: ScanCache) -> dict:
    """Cached stats entry of a table: {"stats": ...} or {"error": ..., "kind": ...}."""
    entry = cache.table(t.fingerprint)
    if entry is None:
        try:
            entry = {"stats": compute_stats(t).to_dict()}
        except TableReadError as e:
            entry = {"error": str(e), "kind": e.kind}
        except (OSError, ValueError, OverflowError, pa.ArrowException, duckdb.Error) as e:
            # Whatever else a bad file raises: report the table, keep scanning the lake.
            entry = {"error": f"{t.path}: {type(e).__name__}: {e}", "kind": "unreadable"}
        cache.put_table(t.fingerprint, entry)
    return entry


def _vertex_issue(t: Table, s: TableStats) -> dict | None:
    """Tables that cannot take part in containment, with the reason."""
    if not s.columns:
        return {"kind": "no_columns", "detail": "the table has no columns"}
    if s.rows == 0:
        return {"kind": "empty", "detail": "0 rows (contained in any table with its columns; left out of the graph)"}
    names = [normalize_name(c.name) for c in s.columns]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        return {"kind": "ambiguous_columns", "detail": f"columns that normalize to the same name: {dup}"}
    return None


def scan_lake(roots: list[str | Path], out: str | Path, options: ScanOptions | None = None) -> ScanResult:
    opts = options or ScanOptions()
    out = Path(out)
    cache = ScanCache(opts.cache or out / "stats_cache.json")
    start = time.perf_counter()
    with _progress(opts.progress) as progress:
        steps = _Steps(progress)
        found, issues = discover(list(roots), exclude=[out])
        tables: list[Table] = []
        stats: list[TableStats] = []
        entries: list[dict] = []
        for t in steps.run("statistics (footers)", found):
            entry = _table_stats(t, cache)
            if "error" in entry:
                issues.append({"table": t.name, "path": t.path, "kind": entry["kind"], "detail": entry["error"]})
                continue
            s = TableStats.from_dict(entry["stats"])
            problem = _vertex_issue(t, s)
            if problem:
                issues.append({"table": t.name, "path": t.path, **problem})
                continue
            tables.append(t)
            stats.append(s)
            entries.append(entry)

        with steps.whole("schema index"):
            edges = schema_candidates(stats)
        with steps.whole("min-max"):
            prune_minmax(edges, stats)

        con = duckdb.connect()
        if opts.threads:
            con.execute(f"SET threads={int(opts.threads)}")
        _content_step(con, edges, tables, opts, cache, steps)
        _verify_step(con, edges, tables, opts, cache, steps)
        con.close()
        contents = _content_hashes(edges, tables, entries, cache, steps)
    cache.save()
    seconds = {**steps.seconds, "total": time.perf_counter() - start}
    return ScanResult(
        tables=tables,
        stats=stats,
        edges=edges,
        issues=issues,
        funnel=funnel(len(tables), edges),
        seconds=seconds,
        cache_hits=cache.hits,
        contents=contents,
    )


def _pair_key(tables: list[Table], e: Edge, what: str) -> str:
    return f"{tables[e.container].fingerprint}|{tables[e.contained].fingerprint}|{what}"


def _replay(e: Edge, entry: dict) -> None:
    e.stage, e.status, e.evidence = entry["stage"], entry["status"], entry["evidence"]


def _content_step(con, edges: list[Edge], tables: list[Table], opts: ScanOptions, cache: ScanCache, steps: _Steps):
    what = f"content:s={opts.sample}:seed={opts.seed}"
    by_contained: dict[int, list[Edge]] = defaultdict(list)
    for e in edges:
        if e.status != "candidate":
            continue
        cached = cache.pair(_pair_key(tables, e, what))
        if cached is not None:
            _replay(e, cached)
        else:
            by_contained[e.contained].append(e)
    for b, group in steps.run("content check (sampled)", list(by_contained.items())):
        check_contained(con, tables[b], group, tables, opts.sample, opts.seed)
        for e in group:
            if e.status != "error":
                cache.put_pair(_pair_key(tables, e, what), {"stage": e.stage, "status": e.status, "evidence": e.evidence})


def _verify_step(con, edges: list[Edge], tables: list[Table], opts: ScanOptions, cache: ScanCache, steps: _Steps):
    survivors = [e for e in edges if e.status == "candidate"]
    if not opts.verify:
        for e in survivors:
            e.status = "unverified"
        return
    todo = []
    for e in survivors:
        cached = cache.pair(_pair_key(tables, e, "verify"))
        if cached is not None:
            _replay(e, cached)
        else:
            todo.append(e)
    for e in steps.run("verification (exact)", todo):
        verify_edge(con, e, tables)
        if e.status != "error":
            cache.put_pair(_pair_key(tables, e, "verify"), {"stage": e.stage, "status": e.status, "evidence": e.evidence})


def _content_hashes(edges: list[Edge], tables: list[Table], entries: list[dict], cache: ScanCache,
                    steps: _Steps) -> list[str | None]:
    """Content hashes of the tables in confirmed edges, the only ones a plan can name. Kept with
    the table's cached statistics, so a rescan of an unchanged lake still reads no data."""
    needed = sorted({k for e in edges if e.status == "confirmed" for k in (e.container, e.contained)})
    contents: list[str | None] = [None] * len(tables)
    for k in steps.run("content hashes", needed):
        t, entry = tables[k], entries[k]
        if "content" not in entry:
            try:
                entry["content"] = t.content_hash()
            except OSError:  # gone or unreadable since it was verified: compared by fingerprint alone
                continue
            cache.put_table(t.fingerprint, entry)
        contents[k] = entry["content"]
    return contents


def funnel(n_tables: int, edges: list[Edge]) -> dict:
    """The R2D2 funnel: ordered pairs considered, removed by each step, confirmed."""
    order = {name: k for k, name in enumerate(STAGES)}
    pairs = n_tables * (n_tables - 1)
    removed = dict.fromkeys(STAGES, 0)
    errors = dict.fromkeys(STAGES, 0)
    for e in edges:
        if e.status == "pruned":
            removed[e.stage] += 1
        elif e.status == "error":
            errors[e.stage] += 1
    removed["schema"] = pairs - len(edges)
    steps, seen = [], pairs
    for name in STAGES:
        left = seen - removed[name] - errors[name]
        steps.append({"step": name, "seen": seen, "removed": removed[name], "errors": errors[name], "left": left})
        seen = left
    reached_content = steps[order["content"]]["seen"]
    return {
        "tables": n_tables,
        "pairs": pairs,
        "steps": steps,
        "confirmed": sum(e.status == "confirmed" for e in edges),
        "unverified": sum(e.status == "unverified" for e in edges),
        "content_fraction_of_schema_candidates": reached_content / len(edges) if edges else 0.0,
        "content_fraction_of_pairs": reached_content / pairs if pairs else 0.0,
    }
