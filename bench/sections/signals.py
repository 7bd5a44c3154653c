"""Signal campaign: SIGINT or SIGTERM at random points of `curate run`, then --resume.

    python bench/sections/signals.py [--docs 10000] [--trials 50] [--seed 0] [--workers 2] [--section-out PATH]

For each trial, a recipe (recipes/quickstart.yaml or recipes/near-dedup.yaml, alternately) over
the demo corpus (`--docs`) into a fresh output; after a random share (2-98%) of the recipe's
reference wall time, SIGINT or SIGTERM (drawn) goes to the whole process group (as Ctrl-C or a
batch system sends it) or to the main process alone (drawn). A trial passes when the run exits
130 (SIGINT) or 143 (SIGTERM) within 10 s of the signal with `interrupted; continue with
--resume` and no traceback (or had finished with 0 before the signal landed), no process below
it is alive 10 s later, and `--resume` exits 0 with published files (data/, trace/)
byte-identical to the uninterrupted run's.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import argparse
import os
import random
import shutil
import signal
import statistics
import time

import harness as h

sys.path.insert(0, str(h.REPO))
from tests.curate.engine import faultkit  # noqa: E402  (the fault tests' kit)

CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}
EXIT_WITHIN = 10.0


def _run(recipe: Path, corpus: Path, out: Path, workers: int, *extra: str):
    return faultkit.start(recipe, "--input", str(corpus / "*.jsonl.gz"), "--output", str(out), *extra,
                          workers=workers)


def trial(recipe: Path, corpus: Path, out: Path, workers: int, after: float, sig: int, group: bool) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    proc = _run(recipe, corpus, out, workers)
    time.sleep(after)
    below = faultkit.descendants(proc.pid)
    sent = time.monotonic()
    landed = proc.poll() is None
    if landed:
        os.killpg(proc.pid, sig) if group else os.kill(proc.pid, sig)
    try:
        code = proc.wait(timeout=60)
    except Exception:  # hung: the trial fails; end it so the campaign goes on
        faultkit.kill(proc, whole_group=True)
        code = None
    exit_seconds = time.monotonic() - sent
    stderr = proc.stderr.read().decode()
    orphans = faultkit.alive(below)
    resume_code = _run(recipe, corpus, out, workers, "--resume").wait() if landed else 0
    if landed:
        clean = (code == CODES[sig] and exit_seconds < EXIT_WITHIN and "Traceback" not in stderr
                 and "internal error" not in stderr and stderr.count("interrupted; continue with --resume") == 1)
    else:
        clean = code == 0
    return {"landed": landed, "code": code, "exit_seconds": exit_seconds if landed else None, "clean": clean,
            "orphans": orphans, "resume_code": resume_code, "digest": faultkit.digest(out),
            "stderr": stderr}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=10_000)
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2)
    h.add_section_args(ap)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    work = h.RUNS / "signals"
    shutil.rmtree(work, ignore_errors=True)
    corpus = work / "corpus"
    from curate.demo import generate

    generate(corpus, docs=args.docs, files=8, seed=0, workers=args.workers)
    refs = {}
    for name in ("quickstart", "near-dedup"):
        recipe = h.REPO / "recipes" / f"{name}.yaml"
        started = time.perf_counter()
        ref = _run(recipe, corpus, work / f"{name}-ref", args.workers)
        assert ref.wait() == 0, f"reference run of {name} failed: {ref.stderr.read().decode()}"
        refs[name] = (recipe, time.perf_counter() - started, faultkit.digest(work / f"{name}-ref"))
    rows, failures, exits = [], [], []
    for i in range(args.trials):
        name = ("quickstart", "near-dedup")[i % 2]
        recipe, seconds, reference = refs[name]
        after = rng.uniform(0.02, 0.98) * seconds
        sig = rng.choice([signal.SIGINT, signal.SIGTERM])
        group = rng.random() < 0.5
        r = trial(recipe, corpus, work / f"{name}-{i}", args.workers, after, sig, group)
        ok = r["clean"] and not r["orphans"] and r["resume_code"] == 0 and r["digest"] == reference
        if r["exit_seconds"] is not None:
            exits.append(r["exit_seconds"])
        rows.append([i, name, f"{after:.1f}s", signal.Signals(sig).name, "group" if group else "main only",
                     "yes" if r["landed"] else "no (finished first)", r["code"],
                     f"{r['exit_seconds']:.2f}" if r["exit_seconds"] is not None else "", len(r["orphans"]),
                     r["resume_code"], "yes" if r["digest"] == reference else "NO", "pass" if ok else "FAIL"])
        print(" | ".join(map(str, rows[-1])), flush=True)
        if not ok:
            failures.append(rows[-1])
            print(f"trial {i} stderr:\n{r['stderr']}", flush=True)
            (work / f"trial-{i}.stderr").write_text(r["stderr"])
    passed = len(rows) - len(failures)
    landed = sum(r[5] == "yes" for r in rows)
    timing = (f" Seconds from the signal to the exit: median {statistics.median(exits):.2f}, "
              f"max {max(exits):.2f}." if exits else "")
    body = (f"Demo corpus of {args.docs:,} documents in 8 files, `--workers {args.workers}`; reference wall "
            f"times: " + ", ".join(f"{n} {s:.1f}s" for n, (_, s, _) in refs.items()) + ". "
            f"**{passed} of {len(rows)} trials pass** ({landed} signals landed before the run ended).{timing}\n\n"
            + h.table(["trial", "recipe", "signal after", "signal", "sent to", "landed", "exit", "exit s",
                       "orphans", "resume exit", "identical", "result"], rows))
    h.emit(args, body, [[f"SIGINT/SIGTERM at random points, then --resume ({len(rows)} trials)",
                         f"{passed} of {len(rows)} pass", "", "130/143 within 10 s, identical bytes, no orphans"]])
    if failures:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
