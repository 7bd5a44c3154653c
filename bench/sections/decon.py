"""decontaminate vs datatrove's NGramsDecontIndexer + NGramsDecontFilter, and the index's scaling.

    python bench/sections/decon.py --docs 20000 --items 1000 --scale 10,100,1000 [--section-out PATH]

1. Side by side on the same documents (demo corpus) and the same benchmark file (items made of
   slices of some documents, as a question and its answer, and items that appear nowhere), n = 13:
   documents per CPU-second of each (curate: the step's fit and apply in this process, index build
   included; datatrove: index from the indexer's compute_hashes, then the filter, in
   bench/.venvs/datatrove), and whether they flag the same documents. The rules coincide here
   (any shared n-gram, every n-gram of question + answer indexed, no item shorter than n); the
   normalisations differ (datatrove's simplify_text also folds digits and diacritics), which the
   agreement figure shows.
2. The index at K benchmark-sized item sets (each `--items` items of 40-80 words): build time
   (wall, CPU) and peak RSS, each K in a fresh process.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import argparse
import gzip
import json
import random
import resource
import subprocess
import tempfile
import time

import pyarrow as pa

import harness as h

BENCH = Path(__file__).resolve().parents[1]
ANCHOR_PYTHON = BENCH / ".venvs" / "datatrove" / "bin" / "python"


def corpus(docs: int) -> list[str]:
    from curate.demo import generate
    folder = h.DATA / f"decon-{docs}"
    if not (folder / "done").exists():
        generate(folder, docs=docs, files=2, seed=0)
        (folder / "done").write_text("")
    return [json.loads(line)["text"] for f in sorted(folder.glob("*.jsonl.gz")) for line in gzip.open(f, "rt")]


def benchmark(texts: list[str], items: int, seed: int = 0) -> list[dict]:
    """Half the items are slices of documents (question: 20 words, answer: the next 10), half word salad."""
    rnd = random.Random(seed)
    long = [t.split() for t in texts if len(t.split()) > 80]
    vocab = sorted({w for t in long[:200] for w in t})
    out = []
    for i in range(items):
        if i % 2 == 0:
            words = rnd.choice(long)
            s = rnd.randrange(len(words) - 40)
            q, a = words[s:s + 20], words[s + 20:s + 30]
        else:
            q, a = rnd.choices(vocab, k=rnd.randint(30, 60)), rnd.choices(vocab, k=rnd.randint(10, 20))
        out.append({"id": f"q{i}", "question": " ".join(q), "answer": " ".join(a)})
    return out


def run_curate(texts: list[str], bench: Path, n: int) -> dict:
    from curate_operators.decon.decontaminate import Decontaminate
    op = Decontaminate(Decontaminate.Params(benchmarks=[{"name": "bench", "path": str(bench),
                                                          "columns": ["question", "answer"], "id_column": "id"}], ngram=n))
    table = pa.table({"text": texts, "_id": [str(i) for i in range(len(texts))], "_ord": list(range(len(texts)))})
    batches = table.to_batches(max_chunksize=8192)
    with tempfile.TemporaryDirectory() as tmp:
        started, cpu0 = time.perf_counter(), time.process_time()
        state = op.fit(iter(batches), Path(tmp))
        flagged = []
        for b in batches:
            verdict = op.apply(b, state)
            flagged += [i for i, k in zip(b.column("_id").to_pylist(), verdict.keep) if not k]
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu0
    return {"cpu": cpu, "seconds": seconds, "flagged": flagged, "summary": state.summary()}


def scale_one(k: int, items: int) -> dict:
    """Build the index of k benchmarks of `items` items each (this process: its peak RSS is the build's)."""
    from curate_operators.decon import index
    from curate_operators.decon.benchmarks import Benchmark
    rnd = random.Random(k)
    vocab = [f"w{i}" for i in range(50_000)]
    with tempfile.TemporaryDirectory() as tmp:
        benches = []
        for b in range(k):
            path = Path(tmp) / f"b{b}.jsonl"
            path.write_text("".join(json.dumps({"text": " ".join(rnd.choices(vocab, k=rnd.randint(40, 80)))}) + "\n"
                                    for _ in range(items)))
            benches.append(Benchmark(name=f"b{b}", path=str(path)))
        started, cpu0 = time.perf_counter(), time.process_time()
        built = index.build(benches, 13, Path(tmp) / "index")
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu0
    return {"benchmarks": k, "ngrams": built["keys"], "index_mb": built["bytes"] / 1e6, "seconds": seconds, "cpu": cpu,
            "rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=20_000)
    ap.add_argument("--items", type=int, default=1000, help="items per benchmark")
    ap.add_argument("--ngram", type=int, default=13)
    ap.add_argument("--scale", default="10,100,1000", help="benchmark counts for the index scaling")
    ap.add_argument("--scale-one", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--workers", type=int, default=2, help="unused: both sides run on one core")
    h.add_section_args(ap)
    args = ap.parse_args()
    if args.scale_one:
        print(json.dumps(scale_one(args.scale_one, args.items)))
        return

    texts = corpus(args.docs)
    work = h.DATA / "decon-run"
    work.mkdir(parents=True, exist_ok=True)
    bench, docs = work / "bench.jsonl", work / "docs.jsonl"
    bench.write_text("".join(json.dumps(r) + "\n" for r in benchmark(texts, args.items)))
    docs.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    ours = run_curate(texts, bench, args.ngram)
    rows = [["curate decontaminate", f"{len(texts):,}", f"{ours['cpu']:.1f}", f"{len(texts) / ours['cpu']:,.0f}",
             f"{len(ours['flagged']):,}"]]
    headlines, agreement = [], "datatrove not installed (bash bench/anchors/setup.sh)"
    if ANCHOR_PYTHON.exists():
        out = work / "datatrove.json"
        subprocess.run([str(ANCHOR_PYTHON), str(BENCH / "anchors/datatrove_decon.py"), str(docs), str(bench), str(args.ngram),
                        str(out)], check=True)
        dt = json.loads(out.read_text())
        dt_cpu = dt["cpu"] + dt["index_cpu"]
        rows.append(["datatrove NGramsDecontIndexer + Filter", f"{len(texts):,}", f"{dt_cpu:.1f}",
                     f"{len(texts) / dt_cpu:,.0f}", f"{len(dt['flagged']):,}"])
        a, b = set(ours["flagged"]), set(dt["flagged"])
        agreement = (f"flagged by both {len(a & b):,}, only curate {len(a - b):,}, only datatrove {len(b - a):,}; "
                     f"same decision on {100 * (len(texts) - len(a ^ b)) / len(texts):.2f}% of documents")
        speedup = (len(texts) / ours["cpu"]) / (len(texts) / dt_cpu)
        headlines.append(["decontaminate vs datatrove NGramsDecont", "", f"{speedup:.1f}x docs per CPU-s", agreement])
    scale_rows = []
    for k in [int(x) for x in args.scale.split(",") if x]:
        m = subprocess.run([sys.executable, __file__, "--scale-one", str(k), "--items", str(args.items)],
                           check=True, capture_output=True, text=True)
        r = json.loads(m.stdout.strip().splitlines()[-1])
        scale_rows.append([f"{k:,}", f"{k * args.items:,}", f"{r['ngrams']:,}", f"{r['index_mb']:.0f}",
                           f"{r['seconds']:.1f}", f"{r['cpu']:.1f}", f"{r['rss_gb']:.2f}"])
    report = ours["summary"]["benchmarks"][0]
    body = "\n\n".join([
        f"{args.docs:,} demo-corpus documents, one benchmark of {args.items:,} items (half slices of documents, half "
        f"absent), n = {args.ngram}, one core each. curate found {report['items_found']:,} of {report['items']:,} items "
        f"in {report['documents']:,} documents.",
        h.table(["tool", "docs", "CPU s", "docs per CPU-s", "flagged"], rows),
        f"Agreement: {agreement}.",
        "Index scaling (items of 40-80 words, each K in a fresh process):",
        h.table(["benchmarks", "items", "distinct 13-grams", "index MB", "build wall s", "build CPU s", "peak RSS GB"],
                scale_rows),
    ])
    h.emit(args, body, headlines)


if __name__ == "__main__":
    main()
