"""ADP per dataset: for every fixture dataset with raw samples, how many reference trajectories
curate reproduces (the acceptance comparison: all events but the documented random closings) and
how fast it converts the raw samples and exports its trajectories (OpenHands style).

Each dataset's sample is converted (and validated) and exported `--rounds` times in one process;
the rates are trajectories per second of that loop (one core), after one warm-up pass. A dataset
whose converter is missing, or whose style cannot render it, shows a dash.

    python bench/sections/adp_datasets.py [--rounds 200] [--fixtures DIR] [--section-out PATH]
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import argparse
import time

import harness as h

sys.path.insert(0, str(h.REPO))

from curate_operators.agent import converters, environments  # noqa: E402
from curate_operators.agent.exporters import Exporter, Skip  # noqa: E402
from curate_operators.agent.schema import validate_trajectory  # noqa: E402
from tests.operators.agent import adp_fixtures as fx  # noqa: E402


def _rate(work, rounds: int) -> float:
    work()  # warm-up: imports, environments, regexes
    start = time.perf_counter()
    n = sum(work() for _ in range(rounds))
    return n / (time.perf_counter() - start)


def measure(dataset: str, rounds: int) -> dict:
    raw, std = fx.load(dataset, "sample_raw.json"), fx.reference_std(dataset)
    row = {"dataset": dataset, "trajectories": len(std), "equal": None, "convert": None, "export": None}
    if dataset not in converters.CONVERTERS:
        return row
    conv = converters.get(dataset)

    def convert() -> list[dict]:
        out = [t for u in converters.iter_convert(conv, raw) for t in u.trajectories]
        for t in out:
            validate_trajectory(t)
        return out

    ours = convert()
    row["equal"] = sum(fx.equal_to_reference(dataset, m, r) for m, r in zip(ours, std))
    row["convert"] = _rate(lambda: len(convert()), rounds)
    exporter = Exporter("openhands", environment=dataset if dataset in environments.names() else None)

    def export() -> int:
        done = 0
        for t in ours:
            try:
                exporter.export(t)
                done += 1
            except Skip:
                pass
        return done

    row["export"] = _rate(export, rounds) if export() else None
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--fixtures", type=Path, default=fx.FIXTURES)
    h.add_section_args(ap)
    args = ap.parse_args()
    fx.FIXTURES = args.fixtures
    rows = [measure(d, args.rounds) for d in fx.datasets() if (args.fixtures / d / "sample_raw.json").is_file()]

    def fmt(v, spec=",.0f"):
        return "-" if v is None else format(v, spec)

    lines = [f"| {r['dataset']} | {r['trajectories']} | {fmt(r['equal'], 'd')} | {fmt(r['convert'])} | "
             f"{fmt(r['export'])} |" for r in rows]
    equal = sum(r["equal"] or 0 for r in rows)
    total = sum(r["trajectories"] for r in rows)
    body = "\n".join([
        f"Every fixture dataset with raw samples ({args.fixtures}): reference trajectories (each raw record's own conversion where "
        "the reference's std sample repeats records), how many curate's conversion equals (all events but the "
        "documented random closings), and trajectories per second converting (and validating) the sample and "
        f"exporting it to OpenHands SFT, {args.rounds} rounds in one process, one core. A dash: no converter, or "
        "nothing the style renders.",
        "",
        "| dataset | trajectories | equal | convert /s | export /s |",
        "|---|---:|---:|---:|---:|",
        *lines,
        f"| all | {total} | {equal} | | |",
    ])
    h.emit(args, body, [[f"ADP datasets equal to the reference ({len(rows)} with raw samples)",
                         f"{equal} of {total} trajectories", "", "per-dataset rates in the section"]])


if __name__ == "__main__":
    main()
