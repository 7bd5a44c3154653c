"""`curate lake`: find contained tables in a data lake, plan their deletion, apply, restore."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from curate.cli_errors import handle_errors
from curate.errors import CurateError

DEFAULT_LAMBDA = 1e6  # 1 MB of storage is worth one second of rebuild per access

app = typer.Typer(
    help="Dataset containment across a data lake (R2D2): scan, plan deletions, apply, restore.",
    no_args_is_help=True,
)
_out = Console()
_err = Console(stderr=True)


@app.command()
@handle_errors
def scan(
    paths: list[Path] = typer.Argument(..., help="Lake roots, table files or partitioned table directories."),
    out: Path = typer.Option(..., "-o", "--out", help="Directory for the graph, funnel and tables."),
    sample: int = typer.Option(1000, help="Rows of each contained candidate checked in the content step."),
    seed: int = typer.Option(0, help="Seed of the content-step sample."),
    verify: bool = typer.Option(True, "--verify/--no-verify", help="Confirm edges with an exact anti-join."),
    threads: Optional[int] = typer.Option(None, help="duckdb threads (default: all cores)."),
    cache: Optional[Path] = typer.Option(None, help="Stats cache file (default: OUT/stats_cache.json)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bars on stderr."),
):
    """Find every table contained in another: schema index, min-max, sampled content, verification."""
    from .scan import ScanOptions, scan_lake
    from .scan_output import write_scan
    from .summary import print_scan

    if sample < 1:
        raise CurateError("--sample must be at least 1")
    if out.exists() and not out.is_dir():
        raise CurateError(f"{out}: exists and is not a directory")
    opts = ScanOptions(sample=sample, seed=seed, verify=verify, threads=threads, cache=cache, progress=progress)
    result = scan_lake([str(p) for p in paths], out, opts)
    write_scan(out, [str(p) for p in paths], opts, result)
    print_scan(result, _out)
    _out.print(f"wrote {out}/graph.parquet, containment.json, funnel.json, tables.parquet, scan.json")


@app.command()
@handle_errors
def plan(
    scan_dir: Path = typer.Argument(..., help="Output directory of `curate lake scan`."),
    out: Optional[Path] = typer.Option(None, "-o", "--out", help="Plan file (default: SCAN_DIR/plan.json)."),
    access: Optional[Path] = typer.Option(None, help="Access frequencies: CSV table,frequency or JSON {table: f}."),
    latency: Optional[float] = typer.Option(None, help="Latency bound L: max seconds to rebuild a deleted table."),
    lam: float = typer.Option(
        DEFAULT_LAMBDA, "--lambda", help="Bytes of storage worth one second of rebuild time per access (default 1 MB)."
    ),
    scan_rate: float = typer.Option(200.0, help="MB/s a rebuild scans its container at (rebuild time estimate)."),
    solver: str = typer.Option("auto", help="auto (exact up to --max-exact tables, greedy above), milp or greedy."),
    max_exact: int = typer.Option(3000, help="Largest number of candidate tables solved exactly."),
):
    """Choose the tables to delete: exact integer program (HiGHS), greedy above --max-exact."""
    from .plan_file import make_plan, write_plan
    from .summary import print_plan

    if solver not in ("auto", "milp", "greedy"):
        raise CurateError(f"--solver must be auto, milp or greedy, not {solver!r}")
    if scan_rate <= 0 or lam < 0:
        raise CurateError("--scan-rate must be positive and --lambda non-negative")
    result = make_plan(
        scan_dir,
        access=access,
        latency=float("inf") if latency is None else latency,
        lam=lam,
        scan_rate_mb_s=scan_rate,
        method=solver,
        max_exact=max_exact,
    )
    target = out or scan_dir / "plan.json"
    write_plan(result, target)
    print_plan(result, _out)
    _out.print(f"wrote {target}; apply it with `curate lake apply {target} --yes`")


@app.command()
@handle_errors
def apply(
    plan_file: Path = typer.Argument(..., help="Plan written by `curate lake plan`."),
    yes: bool = typer.Option(False, "--yes", help="Really move the tables out of the lake."),
    purge: bool = typer.Option(False, help="Also delete the quarantined copies (the storage is only freed then)."),
    quarantine: Optional[Path] = typer.Option(
        None, help="Where deleted tables and restore data go (default: .SCAN.quarantine beside the plan's scan directory)."
    ),
):
    """Move the plan's tables to quarantine, keeping what restore needs. Nothing happens without --yes."""
    from .apply import apply_plan
    from .plan_file import read_plan
    from .quarantine import Quarantine, default_quarantine
    from .summary import human_bytes

    plan = read_plan(plan_file)
    if quarantine is None:
        if not plan.get("scan"):
            raise CurateError(f"{plan_file}: the plan names no scan directory; pass --quarantine")
        quarantine = default_quarantine(plan["scan"])
    report = apply_plan(plan, Quarantine(quarantine), yes=yes, purge=purge)
    if report.dry_run:
        _out.print(
            f"dry run: would move {len(report.moved)} tables ({human_bytes(report.bytes_moved)}) to {quarantine}; "
            "nothing deleted. Pass --yes to apply."
        )
        return
    _out.print(f"moved {len(report.moved)} tables ({human_bytes(report.bytes_moved)}) to {quarantine}")
    if report.purged:
        _out.print("quarantined copies purged; `curate lake restore` rebuilds them from their containers")
    for table, why in report.skipped:
        _err.print(f"[yellow]kept[/] {table}: {why}", highlight=False)


@app.command()
@handle_errors
def restore(
    names: Optional[list[str]] = typer.Argument(None, help="Names of deleted tables (as in the plan)."),
    all_: bool = typer.Option(False, "--all", help="Restore every deleted table."),
    scan: Optional[Path] = typer.Option(None, help="The scan directory of the applied plan: its quarantine lies beside it."),
    quarantine: Optional[Path] = typer.Option(None, help="The quarantine apply used, if not the default beside --scan."),
):
    """Rebuild deleted tables exactly (same rows, order and schema) from their containers."""
    from .quarantine import Quarantine, default_quarantine
    from .restore import restore_tables

    if bool(names) == all_:
        raise CurateError("name the tables to restore, or pass --all (not both)")
    if quarantine is None:
        if scan is None:
            raise CurateError("pass --scan SCAN_DIR (the quarantine lies beside it) or --quarantine")
        quarantine = default_quarantine(scan)
    done = restore_tables(Quarantine(quarantine), None if all_ else list(names))
    for r in done:
        _out.print(f"restored {r.table} ({r.rows} rows) from its {r.source} at {r.path}")
    if not done:
        _out.print("nothing to restore")
