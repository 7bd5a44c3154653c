"""extract_text through `curate run` (WARC in, Parquet out) vs a bare trafilatura loop on the same
pages, with the same settings (datatrove's: favor_precision, no comments, no dedup cache).

  python bench/sections/webcrawl.py --pages 1000 [--files 4] [--rounds 1] [--resiliparse] [--append bench/RESULTS.md]

The pages: the real pages shipped with the tests (tests/operators/web/pages, from trafilatura's
sdist) and the demo corpus's documents as HTML articles, written as .warc.gz files. The bare loop
gets each page's HTML already decoded (the reader's own output, read once before timing): it
times trafilatura alone. curate's runs read the WARC files, extract, and write Parquet, so their
CPU includes reading and writing. CPU s: user + system seconds of the whole process tree
(RUSAGE_CHILDREN of a subprocess, which includes the sandbox processes it waited for).
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
import html
import json
import os
import platform
import resource
import subprocess
import tempfile
import time
from datetime import datetime, timezone

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness import manifest  # noqa: E402


def build(directory: Path, pages: int, files: int) -> list[str]:
    """WARC files of `pages` pages under `directory`; returns the decoded HTML as curate reads it."""
    from curate.demo import generate
    from curate.io import warc
    from tests.operators.web.warcs import Rec, real_pages, write_warc

    real = list(real_pages().items())
    demo = generate(directory / "demo", docs=max(pages, 10), files=1, seed=0)[0]
    docs = [json.loads(line) for line in gzip.open(demo, "rt")]
    recs = []
    for i in range(pages):
        if i % 5 == 0:  # a fifth real pages (large, boilerplate-heavy), the rest articles
            name, body = real[(i // 5) % len(real)]
            recs.append(Rec(f"https://real.example/{i}/{name}", body))
        else:
            d = docs[i % len(docs)]
            paragraphs = "".join(f"<p>{html.escape(p)}</p>" for p in d["text"].split("\n") if p.strip())
            body = (f"<!DOCTYPE html><html><head><title>Post {i}</title></head><body><nav><a href='/'>Home</a> | "
                    f"<a href='/about'>About</a></nav><article><h1>Post {i}</h1>{paragraphs}</article>"
                    f"<footer>Copyright 2024 - all rights reserved</footer></body></html>").encode()
            recs.append(Rec(d["url"] + f"?n={i}", body))
    inputs = directory / "warc"
    inputs.mkdir(parents=True, exist_ok=True)
    per = -(-pages // files)
    for f in range(files):
        write_warc(inputs / f"part-{f:03d}.warc.gz", recs[f * per:(f + 1) * per])
    texts = []
    for path in sorted(inputs.glob("*.warc.gz")):
        with open(path, "rb") as fh:
            texts += [p.html for p in warc.records(fh) if isinstance(p, warc.Page)]
    return texts


BARE = """
import sys, time, json, pickle, trafilatura
pages = pickle.load(open(sys.argv[1], "rb"))
extractor = sys.argv[2]
if extractor == "resiliparse":
    from resiliparse.extract.html2text import extract_plain_text
t = time.perf_counter()
kept = 0
for page in pages:
    if extractor == "resiliparse":
        text = extract_plain_text(page, main_content=True)
    else:
        text = trafilatura.extract(page, favor_precision=True, include_comments=False, deduplicate=False)
    kept += bool(text and text.strip())
print(json.dumps({"kept": kept, "loop_s": time.perf_counter() - t}))
"""


def timed(cmd: list[str], env: dict | None = None) -> tuple[float, float, str]:
    """(wall s, CPU s of the process tree, stdout) of `cmd`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def curate_run(directory: Path, inputs: Path, name: str, step: str, workers: int) -> tuple[float, float, int]:
    out = directory / name
    recipe = directory / f"{name}.yaml"
    recipe.write_text(f"name: {name}\ninput:\n  path: {inputs}\noutput:\n  path: {out}\nsteps:\n  - {step}\n")
    wall, cpu, _ = timed([str(ROOT / ".venv" / "bin" / "curate"), "run", str(recipe), "-w", str(workers)])
    return wall, cpu, manifest(out).steps[-1].rows_out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=1000)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--resiliparse", action="store_true", help="also time resiliparse both ways")
    ap.add_argument("--append", type=Path, help="write the results as the webcrawl section of this RESULTS.md (replacing an older one)")
    args = ap.parse_args()
    import pickle

    python = str(ROOT / ".venv" / "bin" / "python")
    started = datetime.now(timezone.utc)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        texts = build(directory, args.pages, args.files)
        pickled = directory / "pages.pkl"
        pickled.write_bytes(pickle.dumps(texts))
        rows = []
        extractors = ["trafilatura"] + (["resiliparse"] if args.resiliparse else [])
        for extractor in extractors:
            wall, cpu, out = timed([python, "-c", BARE, str(pickled), extractor])
            kept = json.loads(out)["kept"]
            rows.append((f"bare {extractor} loop (decoded HTML in memory)", wall, cpu, kept))
            variants = [("sandbox (timeout_s 10, default)", f"extract_text: {{extractor: {extractor}}}")]
            variants.append(("in process (timeout_s null)", f"extract_text: {{extractor: {extractor}, timeout_s: null}}"))
            for label, step in variants:
                wall, cpu, kept = curate_run(directory, directory / "warc", f"run{len(rows)}", step, args.workers)
                rows.append((f"curate run -w {args.workers}, {extractor} {label}: WARC -> Parquet", wall, cpu, kept))
    n = len(texts)
    base = {}
    lines = ["| run | wall s | CPU s (tree) | pages kept | pages / CPU s | vs bare (per CPU s) |",
             "|---|---|---|---|---|---|"]
    for label, wall, cpu, kept in rows:
        extractor = "resiliparse" if "resiliparse" in label else "trafilatura"
        rate = n / cpu
        if label.startswith("bare"):
            base[extractor] = rate
        lines.append(f"| {label} | {wall:.1f} | {cpu:.1f} | {kept:,} | {rate:.1f} | {rate / base[extractor]:.0%} |")
    table = "\n".join(lines)
    print(table)
    if args.append:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
        cmd = "python bench/sections/webcrawl.py " + " ".join(sys.argv[1:])
        section = (f"\n<!-- section:webcrawl:start -->\n## extract_text on WARC: curate run vs a bare trafilatura loop\n\n"
                   f"- Command: `{cmd}`\n- Date: {started:%Y-%m-%d %H:%M} UTC (commit {commit})\n"
                   f"- Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
                   f"{platform.system()} {platform.release()}, Python {platform.python_version()}; load average (1 min) "
                   f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after (the machine is shared)\n\n"
                   f"{n:,} pages in {args.files} .warc.gz files (a fifth the tests' real pages, the rest demo documents "
                   f"as HTML articles). trafilatura with datatrove's settings on both sides; the bare loop times the "
                   f"extractor alone on HTML decoded beforehand, curate reads the WARC files, extracts and writes "
                   f"Parquet. CPU s: user + system of the whole process tree.\n\n{table}\n<!-- section:webcrawl:end -->\n")
        from harness import results  # RESULTS.md's layout: the section under its theme, in place of an older one

        text = (args.append.read_text() if args.append.exists() else "# Benchmark results\n") + section
        intro, reruns, blocks = results.parse(text)
        args.append.write_text(results.layout(intro, reruns, blocks))


if __name__ == "__main__":
    main()
