"""Human summaries (rich tables) of a scan, a plan, an apply and a restore."""

from __future__ import annotations

from collections import Counter, defaultdict

from rich.console import Console
from rich.table import Table as RichTable

from .scan import ScanResult

_STEP_LABELS = {
    "schema": "1 schema containment (inverted index)",
    "rows": "1b row counts",
    "minmax": "2 min-max (footer statistics)",
    "content": "3 content (sampled, duckdb)",
    "verify": "4 verification (exact anti-join)",
}
_STEP_SECONDS = {"schema": "schema index", "minmax": "min-max", "content": "content check (sampled)", "verify": "verification (exact)"}


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def print_scan(result: ScanResult, console: Console, top: int = 10) -> None:
    f = result.funnel
    total_bytes = sum(t.bytes for t in result.tables)
    console.print(
        f"[bold]{f['tables']}[/] tables in the graph ({human_bytes(total_bytes)}), "
        f"{len(result.issues)} left out, scan took {result.seconds.get('total', 0):.1f}s "
        f"({result.cache_hits} tables' stats from cache)"
    )
    if result.issues:
        kinds = Counter(i["kind"] for i in result.issues)
        console.print("left out: " + ", ".join(f"{k}: {n}" for k, n in sorted(kinds.items())))
        for i in result.issues[:top]:
            console.print(f"  [yellow]{i['kind']}[/] {i['table']}: {i['detail']}")
    funnel = RichTable(title="R2D2 funnel (ordered pairs)")
    for col in ("step", "seen", "removed", "left", "seconds"):
        funnel.add_column(col, justify="left" if col == "step" else "right")
    for s in f["steps"]:
        secs = result.seconds.get(_STEP_SECONDS.get(s["step"], ""), None)
        removed = f"{s['removed']:,}" + (f" (+{s['errors']} errors)" if s["errors"] else "")
        funnel.add_row(_STEP_LABELS[s["step"]], f"{s['seen']:,}", removed, f"{s['left']:,}", "" if secs is None else f"{secs:.2f}")
    console.print(funnel)
    console.print(
        f"content step saw {f['content_fraction_of_pairs']:.2%} of all pairs "
        f"({f['content_fraction_of_schema_candidates']:.1%} of schema candidates); "
        f"confirmed edges: [bold]{f['confirmed']}[/]" + (f", unverified: {f['unverified']}" if f["unverified"] else "")
    )
    contained_by: dict[int, list[int]] = defaultdict(list)
    for e in result.confirmed():
        contained_by[e.container].append(e.contained)
    if contained_by:
        tops = RichTable(title=f"top containers (of {len(contained_by)})")
        for col in ("container", "contains tables", "their bytes"):
            tops.add_column(col, justify="left" if col == "container" else "right")
        ranked = sorted(contained_by.items(), key=lambda kv: (-len(kv[1]), result.tables[kv[0]].name))[:top]
        for a, bs in ranked:
            tops.add_row(result.tables[a].name, str(len(bs)), human_bytes(sum(result.tables[b].bytes for b in bs)))
        console.print(tops)


def print_plan(plan: dict, console: Console, top: int = 10) -> None:
    console.print(f"solver: [bold]{plan['note']}[/]")
    saved, total = plan["bytes_saved"], plan["bytes_total"]
    share = saved / total if total else 0.0
    console.print(
        f"delete [bold]{len(plan['deletions'])}[/] of {plan['tables']} tables, "
        f"saving {human_bytes(saved)} of {human_bytes(total)} ({share:.1%})"
    )
    if plan["deletions"]:
        t = RichTable(title="deletions" + (f" (first {top})" if len(plan["deletions"]) > top else ""))
        for col in ("table", "bytes", "rebuilt from", "rebuild s"):
            t.add_column(col, justify="right" if col in ("bytes", "rebuild s") else "left")
        for d in sorted(plan["deletions"], key=lambda d: -d["bytes"])[:top]:
            t.add_row(d["table"], human_bytes(d["bytes"]), d["container"], f"{d['rebuild_seconds']:.3f}")
        console.print(t)
