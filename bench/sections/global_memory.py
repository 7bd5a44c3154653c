"""Memory of every Global step: peak RSS per process, wall and CPU time, and where the memory goes.

    python bench/sections/global_memory.py [--sizes 1000000,3000000] [--ops exact_dedup,...] [--dim 384]
                                  [--workers 2] [--memory-gb G] [--where-size N] [--corpus-dir DIR]
                                  [--section-out PATH]

Each size is a demo corpus of its own (curate/demo.py, generated once under bench/.data/) and, for the
steps that read embeddings (semantic_dedup, density_prune, novelty, qdc_select), a Parquet twin of
synthetic ones: `id`, `_embedding` (DIM float16, clustered like bench/sections/prune.py's) and a random
`quality` column. `near_dedup` is recipes/near-dedup.yaml itself (normalize_text, exact_dedup,
containment_dedup); its largest run gives the cost per billion tokens (CPU-hours, and the machine's
vCPU-hours at --usd-per-vcpu-hour; tokens per document counted on the corpus's first files). Every operator is one `curate run` (subprocess) of a recipe holding only its step
(recipes: RECIPES below; dataset_metrics after a quality_heuristics step, for score columns to summarise);
the figures are the run's, reading and writing included:

- peak RSS GB of the largest single process (the fit runs in the driver, its pieces in workers) and of
  the whole process tree, sampled every 0.1 s (bench/harness/);
- wall and CPU seconds of the tree; the fit's own seconds (the manifest's `fit_seconds`); the peak disk
  (how far the filesystem's used bytes rose during the run); a size whose run would need more disk than
  is free (the op's smaller run's peak, scaled) is skipped and said so;
- where the memory goes: the fit's on-disk structures by name (the manifest's `work_bytes`: band rows,
  samples, signatures, candidate pairs, edges, spilled embeddings), and at
  `--where-size` (default: the smallest) one more run of each step under tracemalloc in the driver,
  whose largest Python/numpy allocation sites at its traced peak are listed (bench/harness/traced_run.py;
  memory that Arrow, duckdb and faiss allocate natively is not traced: it is RSS minus the traced peak).

The issue's target (issue 23): every process under 3 GB for the dedup steps, 4 GB for the prune
steps, at 1M, 3M and 10M documents, time growing linearly.
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
import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.json as pj
import pyarrow.parquet as pq

import harness as h
from curate.manifest import Manifest

DOCS_PER_FILE = 15_000  # the benches' corpus: ~14.6k documents per file
CENTERS = 2000
BENCHMARK_ITEMS = 1000  # decontaminate's benchmark: the first demo documents, so some rows match

# Operator -> (input: "text" or "embeddings", its step's params as YAML flow).
RECIPES = {
    "exact_dedup": ("text", "{}"),
    "minhash_dedup": ("text", "{}"),
    "containment_dedup": ("text", "{}"),
    "decontaminate": ("text", "{benchmarks: [{name: bench, path: BENCHMARK}]}"),
    "dataset_metrics": ("text", "{score_columns: [quality_word_count, quality_heuristic]}"),
    "semantic_dedup": ("embeddings", "{eps: 0.01}"),
    "density_prune": ("embeddings", "{fraction: 0.5}"),
    "novelty": ("embeddings", "{}"),
    "qdc_select": ("embeddings", "{fraction: 0.5, quality: {quality: 1}}"),
    "near_dedup": ("text", None),  # recipes/near-dedup.yaml itself: normalize_text, exact_dedup, containment_dedup
}
NEAR_DEDUP = h.REPO / "recipes" / "near-dedup.yaml"
TOKEN_SAMPLE_FILES = 2  # corpus files tokenized for the tokens per document of the cost figure
# Steps before the Global one: dataset_metrics summarises score columns over every row.
BEFORE = {"dataset_metrics": "quality_heuristics: {metrics: [word_count]}"}


def text_corpus(docs: int, workers: int) -> Path:
    files = max(1, docs // DOCS_PER_FILE)
    folder = h.demo_files("global-memory", docs, files, workers)[0].parent
    bench = folder / "benchmark.jsonl"
    if not bench.exists():
        with gzip.open(folder / "part-0000.jsonl.gz", "rt") as fin:
            lines = [next(fin) for _ in range(min(BENCHMARK_ITEMS, docs))]
        bench.write_text("".join(lines))
    return folder


def embedding_corpus(docs: int, dim: int, texts: Path) -> Path:
    """Parquet twins of the demo files: their ids, a clustered unit embedding and a quality score."""
    def make(folder):
        rng = np.random.default_rng(0)
        centers = h.unit_rows(rng, CENTERS, dim)
        for src in h.corpus_files(texts):
            ids = pj.read_json(src).column("id")
            n = len(ids)
            x = centers[rng.integers(0, CENTERS, n)] + rng.normal(scale=0.05, size=(n, dim)).astype(np.float32)
            pq.write_table(pa.table({"id": ids, "_embedding": h.half_embeddings(x), "quality": rng.random(n)}),
                           folder / src.name.replace(".jsonl.gz", ".parquet"), compression="none")

    return h.made_once(h.DATA / f"global-memory-emb-{docs}-{dim}", {"docs": docs, "dim": dim}, make)


def recipe(op: str, docs: int, texts: Path, embeddings: Path, out: Path, memory_gb: float | None) -> Path:
    path = h.RUNS / "global-memory" / f"{op}-{docs}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    if op == "near_dedup":
        import yaml

        doc = yaml.safe_load(NEAR_DEDUP.read_text())
        doc["input"]["path"] = str(texts / "part-*.jsonl.gz")
        doc["output"] = {"path": str(out)}
        doc.update({"memory_gb": memory_gb} if memory_gb is not None else {})
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return path
    source, params = RECIPES[op]
    params = params.replace("BENCHMARK", json.dumps(str(texts / "benchmark.jsonl")))
    inputs = (f"{{path: {json.dumps(str(texts / 'part-*.jsonl.gz'))}, text_column: text, id_column: id}}"
              if source == "text" else f"{{path: {json.dumps(str(embeddings / '*.parquet'))}, id_column: id}}")
    lines = [f"name: global-memory-{op}", f"input: {inputs}", f"output: {{path: {json.dumps(str(out))}}}"]
    if memory_gb is not None:
        lines.append(f"memory_gb: {memory_gb:g}")
    lines += ["steps:", *([f"  - {BEFORE[op]}"] if op in BEFORE else []), f"  - {op}: {params}"]
    path.write_text("\n".join(lines) + "\n")
    return path


def tokens_per_doc(texts: Path) -> tuple[float, int]:
    """Tokens per document of the corpus, from its first files, with the tokenize bench's tokenizer
    (all-MiniLM-L6-v2's WordPiece, untruncated)."""
    import tempfile

    from tokenizers import Tokenizer

    from sections.tokenize import default_tokenizer, untruncated

    with tempfile.TemporaryDirectory() as tmp:
        tokenizer = Tokenizer.from_file(untruncated(default_tokenizer(), Path(tmp) / "tokenizer.json"))
    tokens = docs = 0
    for src in h.corpus_files(texts)[:TOKEN_SAMPLE_FILES]:
        text = pj.read_json(src).column("text").to_pylist()
        tokens += sum(len(e.ids) for e in tokenizer.encode_batch_fast(text, add_special_tokens=False))
        docs += len(text)
    return tokens / docs, docs


def cost_rows(op: str, results: dict, sizes: list[int], texts: dict, usd_per_vcpu_hour: float, cores: int):
    """Per billion tokens of the largest size `op` ran at: CPU-hours, and the machine's vCPU-hours
    (wall x its cores, what a rented machine bills) at `usd_per_vcpu_hour`."""
    docs = max(d for d in sizes if (op, d) in results)
    m = results[op, docs]["m"]
    per_doc, sampled = tokens_per_doc(texts[docs])
    billions = docs * per_doc / 1e9
    cpu_h, machine_h = m.cpu_seconds / 3600 / billions, m.seconds * cores / 3600 / billions
    return [op, f"{docs:,}", f"{per_doc:,.0f} (of {sampled:,} docs)", f"{cpu_h:,.1f}",
            f"{machine_h:,.1f}", f"${machine_h * usd_per_vcpu_hour:,.2f}"]


def structures(manifest: Manifest) -> str:
    """The fits' on-disk structures, largest first (`name size`, what would be in memory if held):
    the manifest's `work_bytes` of each Global step, taken before the fit's intermediates were removed."""
    sizes: dict[str, int] = {}
    for step in manifest.steps:
        for name, size in (step.work_bytes or {}).items():
            sizes[name] = sizes.get(name, 0) + size
    top = sorted(sizes.items(), key=lambda kv: -kv[1])[:4]
    return ", ".join(f"{name} {size / 1e6:,.0f} MB" for name, size in top if size)


def projected_disk_gb(op: str, docs: int, results: dict) -> float | None:
    """The disk a run of `op` at `docs` would take, scaled from its largest smaller run's peak."""
    smaller = [d for (o, d) in results if o == op and d < docs]
    if not smaller:
        return None
    return results[op, max(smaller)]["m"].peak_disk_gb * docs / max(smaller)


def run(op: str, docs: int, texts: Path, embeddings: Path, args, traced: bool) -> dict:
    label = f"{op}-{docs}" + ("-traced" if traced else "")
    out = h.RUNS / "global-memory" / f"out-{label}"
    path = recipe(op, docs, texts, embeddings, out, args.memory_gb)
    where = h.RUNS / "global-memory" / f"where-{label}.json"
    cli = [str(h.BENCH / "harness/traced_run.py"), str(where)] if traced else ["-m", "curate.cli"]
    # The fits' phases (signed, candidate pairs, verified) with their times, in the run's log
    m = h.run_measured([h.CURATE[0], *cli, "run", str(path), "--overwrite", "--workers", str(args.workers)],
                       env={"CURATE_LOG_LEVEL": "info"}, log=h.RUNS / "global-memory" / f"{label}.log")
    h.require_ok(m, f"curate run ({label})")
    manifest = h.manifest(out)
    fit_s = [s.fit_seconds for s in manifest.steps if s.fit_seconds is not None]
    # What the fits report of their work (containment_dedup: candidate pairs, common band keys left out)
    found = "; ".join(f"{k} {v:,}" for st in manifest.steps if isinstance(st.summary, dict)
                      for k, v in st.summary.items() if isinstance(v, int))
    result = {"m": m, "fit_s": sum(fit_s) if fit_s else None, "disk": structures(manifest), "found": found}
    if traced:
        result["where"] = json.loads(where.read_text())
    shutil.rmtree(out, ignore_errors=True)  # the work files of a large run take GBs
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000000,3000000", help="demo documents per run, comma-separated")
    ap.add_argument("--ops", default=",".join(RECIPES), help="Global operators to run, comma-separated")
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory-gb", type=float, default=None, help="the recipes' memory_gb (default: curate's)")
    ap.add_argument("--usd-per-vcpu-hour", type=float, default=0.05,
                    help="the price the near-dedup cost per billion tokens is given at (an on-demand cloud vCPU-hour)")
    ap.add_argument("--corpus-dir", type=Path, default=h.DATA,
                    help="where the corpora are made once and read (a tmpfs such as /dev/shm leaves the disk to the "
                         "runs' work files; the peak disk is the runs' either way)")
    ap.add_argument("--where-size", type=int, default=None,
                    help="size of the tracemalloc runs (default: the smallest; 0: none)")
    h.add_section_args(ap)
    args = ap.parse_args()
    h.DATA = args.corpus_dir
    sizes = [int(s) for s in args.sizes.split(",")]
    ops = args.ops.split(",")
    unknown = [op for op in ops if op not in RECIPES]
    if unknown:
        raise SystemExit(f"unknown operators {unknown}; known: {', '.join(RECIPES)}")
    where_size = min(sizes) if args.where_size is None else args.where_size
    rows, where_rows, results, corpora, skipped = [], [], {}, {}, {}
    for docs in sizes:
        texts = corpora[docs] = text_corpus(docs, args.workers)
        embeddings = embedding_corpus(docs, args.dim, texts) if any(RECIPES[o][0] == "embeddings" for o in ops) else None
        for op in ops:
            need, free = projected_disk_gb(op, docs, results), shutil.disk_usage(h.RUNS).free / 1e9
            if need is not None and need > free:
                skipped[op, docs] = f"{op} at {docs:,} (its smaller run's disk scaled: {need:,.0f} GB; {free:,.0f} GB free)"
                print(f"skipped: {skipped[op, docs]}", flush=True)
                section(args, sizes, ops, rows, where_rows, results, corpora, skipped)
                continue
            r = run(op, docs, texts, embeddings, args, traced=False)
            results[op, docs] = r
            m = r["m"]
            print(f"{op} {docs}: {m.seconds:.0f}s wall, {m.cpu_seconds:.0f} CPU-s, peak process "
                  f"{m.peak_process_gb:.2f} GB, tree {m.peak_rss_gb:.2f} GB", flush=True)
            rows.append([op, f"{docs:,}", f"{m.seconds:.1f}", f"{m.cpu_seconds:.1f}",
                         f"{r['fit_s']:.1f}" if r["fit_s"] is not None else "", f"{m.peak_process_gb:.2f}",
                         f"{m.peak_rss_gb:.2f}", f"{m.peak_disk_gb:.1f}", r["disk"], r["found"]])
            if docs == where_size:
                t = run(op, docs, texts, embeddings, args, traced=True)["where"]
                sites = "; ".join(f"{s['site']} {s['mb']:,.0f} MB" for s in t["top"][:3])
                where_rows.append([op, f"{docs:,}", f"{t['peak_mb']:,.0f}", sites])
            # Written after every run, so that a run of hours stopped on the way keeps what it finished.
            section(args, sizes, ops, rows, where_rows, results, corpora, skipped)


def section(args, sizes: list[int], ops: list[str], rows, where_rows, results, corpora, skipped: dict) -> None:
    """The section over the runs finished so far (`results`: {(step, docs): ...})."""
    body = [
        f"One `curate run` per Global step (its only step; near_dedup: recipes/near-dedup.yaml), --workers {args.workers}, over the demo corpus "
        f"(text steps) or its Parquet twin of synthetic {args.dim}-d float16 embeddings (prune, novelty, qdc)"
        f"{f', made and read in {args.corpus_dir}' if args.corpus_dir != h.BENCH / '.data' else ''}; "
        f"recipe memory_gb {args.memory_gb if args.memory_gb is not None else 'default'}; load average at the "
        f"end {h.load()}. Peak RSS sampled every 0.1 s; 'process' is the largest single process.", "",
        h.table(["step", "docs", "wall s", "CPU s", "fit s", "peak process GB", "peak tree GB", "peak disk GB",
                 "the fit's work files before removal (largest)", "the fit's summary (counts)"], rows),
    ]
    growth = []
    for op in ops:
        done = [d for d in sizes if (op, d) in results]
        if len(done) > 1:
            lo, hi = results[op, done[0]]["m"], results[op, done[-1]]["m"]
            growth.append([op, f"{done[0]:,} -> {done[-1]:,} ({done[-1] / done[0]:.3g}x)", f"{hi.seconds / lo.seconds:.2f}x",
                           f"{hi.cpu_seconds / lo.cpu_seconds:.2f}x", f"{hi.peak_process_gb / lo.peak_process_gb:.2f}x"])
    if growth:
        body += ["", "Growth from the smallest to the largest size run (linear time = the documents' ratio, "
                 "bounded memory = 1x):", "", h.table(["step", "documents", "wall", "CPU", "peak process"], growth)]
    if where_rows:
        body += ["", "Where the driver's traced memory goes at its traced peak (tracemalloc: Python objects and "
                 "numpy arrays; the rest of the RSS is native Arrow / duckdb / faiss memory):", "",
                 h.table(["step", "docs", "traced peak MB", "largest allocation sites (file:line MB)"], where_rows)]
    if any(op == "near_dedup" for op, _ in results):
        cores = len(os.sched_getaffinity(0))
        cost = cost_rows("near_dedup", results, sizes, corpora, args.usd_per_vcpu_hour, cores)
        body += ["", f"Cost per billion tokens of recipes/near-dedup.yaml at its largest size run (tokens: the "
                 f"tokenize bench's WordPiece tokenizer; machine hours: wall x this machine's {cores} cores; at an assumed "
                 f"${args.usd_per_vcpu_hour:g} per vCPU-hour):", "",
                 h.table(["recipe", "docs", "tokens per doc", "CPU-hours per 1B tokens", "vCPU-hours per 1B tokens",
                          "cost per 1B tokens"], [cost])]
    if skipped:
        body += ["", f"**Not run for want of disk** (peak disk: how far the filesystem's used bytes rose during "
                 f"the run): {'; '.join(skipped.values())}."]
    missing = [f"{op} at {d:,}" for d in sizes for op in ops if (op, d) not in results and (op, d) not in skipped]
    if missing:
        body += ["", f"**Partial**: not run (the run was stopped before them): {', '.join(missing)}."]
    worst = max((r["m"].peak_process_gb, op, docs) for (op, docs), r in results.items())
    h.emit(args, "\n".join(body), [["Global steps: the largest peak RSS of one process", "", "",
                                    f"largest {worst[0]:.2f} GB ({worst[1]} at {worst[2]:,})"]])


if __name__ == "__main__":
    main()
