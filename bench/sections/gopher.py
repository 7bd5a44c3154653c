"""gopher_quality vs datatrove (GopherQualityFilter + GopherRepetitionFilter): docs/s and agreement.

    python bench/sections/gopher.py [--docs 3000] [--batch 1000] [--workers 2] [--section-out PATH]

Both sides get the same synthetic web-like documents (bench/corpora/gopher_webtext.py) split into
`--workers` contiguous shards, one process per shard, each pinned to its own core; docs/s is
all documents over the time of the slowest process (timed inside it, after loading the data and
a warm-up), by the wall clock and by the process's CPU time (steadier on a shared machine). Our processes receive the shard as a
stream of Arrow batches of `--batch` rows; datatrove's receive Documents one by one (its
normal execution). This compares the operators, not the pipelines (sections/pipeline.py runs each tool
through its entry point). datatrove runs in bench/.venvs/datatrove (bench/anchors/setup.sh).
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import argparse
import collections
import json
import os
import subprocess
import time

BENCH = Path(__file__).resolve().parents[1]
ROOT = BENCH.parent
DATA = BENCH / ".data"
ANCHOR_PYTHON = BENCH / ".venvs" / "datatrove" / "bin" / "python"


def ours(docs_path: str, out_path: str, batch_size: int) -> None:
    """One worker: time gopher_quality over the shard as a stream of record batches."""
    import pyarrow as pa

    sys.path.insert(0, str(ROOT))
    from curate_operators.filters.gopher import GopherQuality

    with open(docs_path) as f:
        texts = [json.loads(line)["text"] for line in f]
    batches = [pa.RecordBatch.from_pydict({"text": pa.array(texts[i:i + batch_size], pa.large_string())})
               for i in range(0, len(texts), batch_size)]
    op = GopherQuality()
    op.keep(batches[0].slice(0, 5))  # warm up (regex compilation); not timed
    started, cpu_started = time.perf_counter(), time.process_time()
    verdicts = [op.keep(b) for b in batches]
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    kept = [bool(k) for v in verdicts for k in v.keep]
    reasons = [r for v in verdicts for r in v.reason.to_pylist()]
    with open(out_path, "w") as f:
        json.dump({"seconds": seconds, "cpu": cpu, "docs": len(texts), "kept": kept, "reasons": reasons}, f)


def _shards(n_docs: int, workers: int, seed: int) -> list[Path]:
    sys.path.insert(0, str(BENCH))
    from corpora.gopher_webtext import make_documents

    DATA.mkdir(exist_ok=True)
    paths = [DATA / f"gopher-{n_docs}-{seed}-{i}of{workers}.jsonl" for i in range(workers)]
    if not all(p.exists() for p in paths):
        docs = make_documents(n_docs, seed)
        per = -(-n_docs // workers)
        for i, path in enumerate(paths):
            with open(path, "w") as f:
                f.writelines(json.dumps({"text": t}) + "\n" for t in docs[i * per:(i + 1) * per])
    return paths


def _run_side(commands: list[list[str]], outs: list[Path]) -> dict:
    """Start one pinned process per shard, wait, merge their results; the time is the slowest's."""
    cores = sorted(os.sched_getaffinity(0))
    env = {**os.environ, "POLARS_MAX_THREADS": "1", "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen(["taskset", "-c", str(cores[i % len(cores)]), *cmd], env=env)
             for i, cmd in enumerate(commands)]
    for p in procs:
        if p.wait():
            raise SystemExit(f"{commands[procs.index(p)]} failed")
    parts = [json.loads(o.read_text()) for o in outs]
    return {
        "seconds": max(p["seconds"] for p in parts),
        "cpu": max(p["cpu"] for p in parts),
        "docs": sum(p["docs"] for p in parts),
        "kept": [k for p in parts for k in p["kept"]],
        "reasons": [r for p in parts for r in p["reasons"]],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=3000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--worker", nargs=2, metavar=("DOCS", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--section-out", type=Path)
    args = ap.parse_args()
    if args.worker:
        return ours(*args.worker, args.batch)

    sys.path.insert(0, str(BENCH))
    import harness as h

    shards = _shards(args.docs, args.workers, args.seed)
    ours_out = [p.with_suffix(".ours.json") for p in shards]
    anchor_out = [p.with_suffix(".datatrove.json") for p in shards]
    us = _run_side([[sys.executable, __file__, "--batch", str(args.batch), "--worker", str(p), str(o)]
                    for p, o in zip(shards, ours_out)], ours_out)
    dt = _run_side([[str(ANCHOR_PYTHON), str(BENCH / "anchors/datatrove_gopher.py"), str(p), str(o)]
                    for p, o in zip(shards, anchor_out)], anchor_out)

    n = us["docs"]
    agree = sum(a == b for a, b in zip(us["kept"], dt["kept"]))
    rows = [[name, f"{n / side['seconds']:,.0f}", f"{n / side['cpu']:,.0f}", f"{side['seconds']:.2f}",
             f"{side['cpu']:.2f}", f"{sum(side['kept']) / n:.1%}"]
            for name, side in (("curate gopher_quality", us), ("datatrove Gopher filters", dt))]
    wall, cpu = h.ratio(dt["seconds"], us["seconds"]), h.ratio(dt["cpu"], us["cpu"])
    rows.append(["**curate speed-up**", f"**{wall}**", f"**{cpu}**", "", "", ""])
    pairs = collections.Counter((a, b) for a, b, ka, kb in zip(us["reasons"], dt["reasons"], us["kept"], dt["kept"])
                                if ka != kb)
    both = collections.Counter((a, b) for a, b, ka, kb in zip(us["reasons"], dt["reasons"], us["kept"], dt["kept"])
                               if not ka and not kb)
    env = subprocess.run([str(ANCHOR_PYTHON), "-c", "import importlib.metadata as m; print(m.version('datatrove'), "
                          "m.version('spacy'))"], capture_output=True, text=True).stdout.split()
    body = "\n".join([
        f"{n:,} synthetic web-like documents (bench/corpora/gopher_webtext.py, "
        f"{sum(s.stat().st_size for s in shards) / n / 1000:.1f} KB mean), {args.workers} shards, one pinned "
        f"process per shard and core on each side; ours gets Arrow batches of {args.batch} rows, datatrove Documents "
        f"through filter.run(). datatrove {' / spaCy '.join(env) if env else '?'} with its default English word "
        f"tokenizer (spaCy blank 'en'). Times are of the slowest process's timed loop (after loading and a warm-up), "
        f"wall and that process's CPU time; load average at the end {h.load()}.", "",
        h.table(["", "docs/s (wall)", "docs/s (CPU)", "wall s", "CPU s", "kept"], rows), "",
        f"Keep/drop agreement with datatrove: **{agree / n:.2%}** ({n - agree} of {n} differ).", "",
        "Disagreements (our first failing rule, datatrove's):", "",
        h.table(["ours", "datatrove", "documents"], [[a or "kept", b or "kept", c] for (a, b), c in pairs.most_common(12)])
        if pairs else "(none)", "",
        "Dropped by both (our rule, datatrove's), most common:", "",
        h.table(["ours", "datatrove", "documents"], [[a, b, c] for (a, b), c in both.most_common(8)]) if both else "(none)",
        "", "Known definition differences: the duplicate n-gram character fraction follows the Gopher paper (every "
        "occurrence of a repeated n-gram counts, the first included; datatrove counts only repeats after the first); "
        "words are whitespace tokens (datatrove: spaCy tokens, punctuation split off); blank lines count in no line "
        "fraction; stop words match in any case; rule order differs, so first-failing reasons differ for documents "
        "failing several rules.",
    ])
    h.emit(args, body, [[f"gopher_quality operator vs datatrove's Gopher filters ({n:,} docs)", wall, cpu,
                         f"operator level; agreement {agree / n:.2%}"]])

if __name__ == "__main__":
    main()
