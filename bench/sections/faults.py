"""Fault campaign: `curate run` SIGKILLed at random points and at every phase boundary, then resumed.

    python bench/sections/faults.py [--docs 20000] [--random 6] [--seed 0] [--workers 2] [--section-out PATH]

For each of recipes/quickstart.yaml and recipes/near-dedup.yaml, over the demo corpus (`--docs`):
an uninterrupted reference run, then trials, each into a fresh output:
  - once at each phase boundary (curate's failpoints: a task done, a stage done, inside a Global
    fit, its state written, a task of the Global's apply stage, output staged, between the data/
    rename and the manifest), killing the whole process group in one trial and the main process
    alone in another;
  - `--random` trials killed after a random share (5-95%) of the reference run's wall time,
    alternating group and main-only kills; every third one kills the first resume again.
Each trial then runs `--resume` to the end. A trial passes when every resume exits 0, the
published files (data/ and trace/) are byte-identical (sha256) to the reference, and no process
that was below the killed run is alive 10 s later (checked by pid in /proc).
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import argparse
import random
import shutil
import time

import harness as h

sys.path.insert(0, str(h.REPO))
from tests.curate.engine import faultkit  # noqa: E402  (the fault tests' kit: same kill helpers)

PHASES = ["task-done", "stage-done", "fit", "state-written", "task-done@10", "staged", "published-data"]


def trial(recipe: Path, corpus: Path, out: Path, workers: int, *, point: str | None, after: float | None,
          whole_group: bool, kill_resume: float | None) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    args = ["--input", str(corpus / "*.jsonl.gz"), "--output", str(out)]
    proc = faultkit.start(recipe, *args, failpoint=point, workers=workers)
    if point:
        reached = faultkit.wait_for_failpoint(proc)
    else:
        time.sleep(after)
        reached = proc.poll() is None
    orphans, codes = [], []
    if reached:
        orphans += faultkit.alive(faultkit.kill(proc, whole_group))
        if kill_resume is not None:  # kill the first resume too, mid-way
            again = faultkit.start(recipe, *args, "--resume", workers=workers)
            time.sleep(kill_resume)
            if again.poll() is None:
                orphans += faultkit.alive(faultkit.kill(again, not whole_group))
            else:
                codes.append(again.returncode)
        resumed = faultkit.start(recipe, *args, "--resume", workers=workers)
        codes.append(resumed.wait())
    else:
        codes.append(proc.wait())  # finished before the kill: nothing to resume
    return {"killed": reached, "codes": codes, "orphans": orphans, "digest": faultkit.digest(out)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--random", type=int, default=6, help="random-time trials per recipe")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    h.add_section_args(ap)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    work = h.RUNS / "faults"
    shutil.rmtree(work, ignore_errors=True)
    corpus = work / "corpus"
    from curate.demo import generate

    generate(corpus, docs=args.docs, files=8, seed=0, workers=args.workers)
    rows, failures = [], []
    for name in ("quickstart", "near-dedup"):
        recipe = h.REPO / "recipes" / f"{name}.yaml"
        started = time.perf_counter()
        ref = trial(recipe, corpus, work / f"{name}-ref", args.workers, point=None, after=0, whole_group=True,
                    kill_resume=None)
        ref_seconds = time.perf_counter() - started
        assert ref["codes"] == [0] and ref["digest"], f"reference run of {name} failed"
        plans = [(p, None, g, None) for p in PHASES for g in (True, False)]
        plans += [(None, rng.uniform(0.05, 0.95) * ref_seconds, i % 2 == 0,
                   rng.uniform(0.2, 0.8) * ref_seconds if i % 3 == 2 else None) for i in range(args.random)]
        for i, (point, after, group, kill_resume) in enumerate(plans):
            r = trial(recipe, corpus, work / f"{name}-{i}", args.workers, point=point, after=after,
                      whole_group=group, kill_resume=kill_resume)
            ok = all(c == 0 for c in r["codes"]) and not r["orphans"] and r["digest"] == ref["digest"]
            when = point or f"after {after:.1f}s"
            rows.append([name, when, "group" if group else "main only", "yes" if kill_resume else "no",
                         "yes" if r["killed"] else "no (finished first)", " ".join(map(str, r["codes"])),
                         len(r["orphans"]), "yes" if r["digest"] == ref["digest"] else "NO", "pass" if ok else "FAIL"])
            print(" | ".join(map(str, rows[-1])), flush=True)
            if not ok:
                failures.append(rows[-1])
    passed = len(rows) - len(failures)
    body = (f"Demo corpus of {args.docs:,} documents in 8 files, `--workers {args.workers}`. "
            f"**{passed} of {len(rows)} trials pass** (all resumes exit 0, published bytes identical to the "
            f"uninterrupted run, no process left alive).\n\n"
            + h.table(["recipe", "killed at", "kill", "resume killed too", "killed", "resume exit codes",
                       "orphans", "identical", "result"], rows))
    h.emit(args, body, [[f"SIGKILL at every phase and at random points, then --resume ({len(rows)} trials)",
                         f"{passed} of {len(rows)} pass", "", "identical bytes, resumes exit 0, no orphans"]])
    if failures:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
