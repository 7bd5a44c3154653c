"""QDC: qdc_select vs random vs top-quality on a planted corpus; the cost of the heuristic scores on
the quickstart; perplexity vs a bare batched torch loop; report.html size for a 1M-row run.

    python bench/sections/qdc.py [--docs-files 7] [--ppl-docs 2000] [--report-rows 1000000] [--repeats 2]
                              [--workers 2] [--parts select,overhead,perplexity,report] [--section-out PATH]

1. selection: the planted corpus of tests/operators/score/planted.py at scale (topics of varied
   good rows, one excellent document copied many times, spam), through QdcSelect.fit/apply. Each
   method picks the same N rows as a random and a top-quality-only pick; the table gives mean
   quality, Vendi, spam and copies in each.
2. overhead: `curate run` of the quickstart (normalize_text, gopher_quality, exact_dedup) on the first
   K demo-corpus files (14,583 docs each: 7 = 102k), beside the same recipe plus quality_heuristics
   (every Gopher metric and quality_heuristic for every row, before the filter), and the quickstart
   with `gopher_quality: {scores: true}` (the filter's own measurements kept as columns). Rounds
   rotate the order; medians of wall and CPU-seconds of the process tree.
3. perplexity: a GPT-2 built from a config (4 layers, 256 wide, random weights: speed only), the
   same texts, batch size and max length: `curate run` with one perplexity step (one model worker)
   vs a bare script: tokenize, sort by length, batches through the model, NLL per text. Both are
   whole processes (read, load, score, write); texts per second of each and the ratio.
4. report: a 1M-row run (Parquet input with score columns; a sql_filter removing ~30% into the
   trace, exact_dedup), then `curate report`: its seconds and report.html's size.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import argparse
import json
import statistics
import time

import numpy as np

import harness as h

sys.path.insert(0, str(h.REPO))


# ---------------------------------------------------------------- 1. selection on a planted corpus
def part_select(work: Path) -> tuple[str, list]:
    import pyarrow as pa

    from curate_operators.score import metrics
    from curate_operators.score.qdc_select import QdcSelect
    from tests.operators.score.planted import planted

    x, q, kind = planted(seed=0, topics=200, per_topic=20, copies=1000, spam=1000, dim=256)
    n, size = len(q), 2000

    def batches():
        for s in range(0, n, 4096):
            v = x[s:s + 4096]
            yield pa.record_batch({"_id": pa.array([str(i) for i in range(s, s + len(v))]),
                                   "_ord": pa.array(np.arange(s, s + len(v), dtype=np.int64)),
                                   "_embedding": pa.FixedSizeListArray.from_arrays(pa.array(v.ravel()), x.shape[1]),
                                   "quality_score": pa.array(q[s:s + 4096])})

    picks = {"random": np.random.default_rng(0).choice(n, size, replace=False), "top quality": np.argsort(-q)[:size]}
    seconds = {}
    for method, weight in (("threshold", 1.0), ("facility_location", 1.0), ("facility_location", 3.0)):
        name = f"qdc_select ({method}{f', quality_weight {weight:g}' if method != 'threshold' else ''})"
        folder = work / f"select-{method}-{weight:g}"
        folder.mkdir(parents=True, exist_ok=True)
        op = QdcSelect(QdcSelect.Params(size=size, quality={"quality_score": 1.0}, method=method, threshold=0.95,
                                        quality_weight=weight))
        start = time.perf_counter()
        state = op.fit(batches(), folder)
        keep = np.concatenate([op.apply(b, state).keep for b in batches()])
        seconds[name] = time.perf_counter() - start
        picks[name] = np.flatnonzero(keep)
    rows = []
    for name, rows_ in picks.items():
        rows.append([name, len(rows_), f"{q[rows_].mean():.3f}", f"{metrics.vendi(x[rows_]):.1f}",
                     f"{(kind[rows_] == 'spam').mean():.1%}", f"{(kind[rows_] == 'duplicate').sum()}",
                     f"{seconds[name]:.1f}" if name in seconds else ""])
    body = (f"Planted corpus: {n:,} rows ({(kind == 'good').sum():,} good rows in 200 topics, "
            f"{(kind == 'duplicate').sum():,} near-copies of one excellent row, {(kind == 'spam').sum():,} spam), "
            f"256-d unit embeddings; every pick keeps {size:,} rows. Input: mean quality {q.mean():.3f}, "
            f"Vendi {metrics.vendi(x):.1f}. Both methods use threshold 0.95; facility location covers the "
            f"spam region too unless the score weighs more (quality_weight).\n\n"
            + h.table(["pick", "rows", "mean quality", "Vendi", "spam", "near-copies", "seconds (fit+apply)"], rows))
    t, f, r, top = (picks["qdc_select (threshold)"], picks["qdc_select (facility_location, quality_weight 1)"],
                    picks["random"], picks["top quality"])
    heads = [["qdc_select (threshold) vs random: mean quality", f"{q[t].mean():.3f} vs {q[r].mean():.3f}", "",
              "planted corpus"],
             ["qdc_select (threshold) vs top-quality: Vendi", f"{metrics.vendi(x[t]):.1f} vs {metrics.vendi(x[top]):.1f}",
              "", "planted corpus"],
             ["qdc_select (facility location, weight 1) vs random / top: quality, Vendi",
              f"{q[f].mean():.3f} vs {q[r].mean():.3f}; {metrics.vendi(x[f]):.1f} vs {metrics.vendi(x[top]):.1f}", "",
              "planted corpus"]]
    return body, heads


# ---------------------------------------------------------------- 2. heuristic scores' overhead
QUICKSTART = ["normalize_text: {}", "gopher_quality: {}", "exact_dedup: {}"]
VARIANTS = {
    "quickstart": QUICKSTART,
    "quickstart + quality_heuristics (kept rows)": [*QUICKSTART, "quality_heuristics: {}"],
    "quickstart + quality_heuristics (every row)": ["normalize_text: {}", "quality_heuristics: {}",
                                                    "gopher_quality: {}", "exact_dedup: {}"],
    "quickstart, gopher_quality {scores: true}": ["normalize_text: {}", "gopher_quality: {scores: true}",
                                                  "exact_dedup: {}"],
}


def recipe(path: Path, inputs: str, out: Path, steps: list[str]) -> Path:
    path.write_text("\n".join(["name: bench", f"input: {{path: {json.dumps(inputs)}, text_column: text, id_column: id}}",
                               f"output: {{path: {json.dumps(str(out))}}}", "steps:", *(f"  - {s}" for s in steps)]) + "\n")
    return path


def part_overhead(work: Path, files: int, workers: int, repeats: int) -> tuple[str, list]:
    src = h.corpus_files(h.corpus(workers))[:files]
    inputs = work / "overhead-in"
    if inputs.exists():
        for p in inputs.iterdir():
            p.unlink()
    inputs.mkdir(parents=True, exist_ok=True)
    for f in src:
        (inputs / f.name).symlink_to(f)
    docs = files * 14_583
    results: dict[str, list] = {k: [] for k in VARIANTS}
    names = list(VARIANTS)
    for r in range(repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            key = names.index(name)
            rec = recipe(work / f"overhead-{key}.yaml", str(inputs / "*.jsonl.gz"), work / f"overhead-out-{key}",
                         VARIANTS[name])
            m = h.curate_run(rec, "--workers", str(workers), "--overwrite", "--no-report", log=work / f"overhead-{key}.log")
            h.require_ok(m, name)
            results[name].append((m.seconds, m.cpu_seconds))
    rows, heads = [], []
    for name, w, c, dw, dc in h.medians_vs_first(results):
        rows.append([name, f"{w:.1f}", f"{c:.1f}", dw, dc])
        if name != "quickstart":
            heads.append([f"{name} vs quickstart ({docs // 1000}k docs)", dw, dc, "target < +20% wall"])
    body = (f"First {files} demo-corpus files (~{docs:,} docs), --workers {workers}, medians of {repeats} rounds "
            f"(order rotated). `quality_heuristics` (defaults: the cheap Gopher metrics, 12 `quality_*` columns, and "
            f"`quality_heuristic`) runs last, on the rows the quickstart keeps, or first, on every row; `scores: true` "
            f"keeps gopher_quality's own measurements as columns.\n\n"
            + h.table(["recipe", "wall s", "CPU s", "wall vs quickstart", "CPU vs quickstart"], rows))
    return body, heads


# ---------------------------------------------------------------- 3. perplexity vs a bare torch loop
BARE = r'''
import sys, time, json, gzip, numpy as np, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
model_dir, files, batch, max_len, out = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
torch.set_num_threads(1)
texts = [json.loads(l)["text"] for f in files for l in gzip.open(f)]
tok = AutoTokenizer.from_pretrained(model_dir)
model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
start = time.perf_counter()
ids = [[tok.bos_token_id] + e for e in tok(texts, truncation=True, max_length=max_len - 1)["input_ids"]]
order = np.argsort([-len(i) for i in ids], kind="stable")
nll = np.empty(len(ids))
with torch.inference_mode():
    for s in range(0, len(ids), batch):
        rows = [ids[i] for i in order[s:s + batch]]
        w = max(map(len, rows))
        x = torch.full((len(rows), w), tok.pad_token_id); m = torch.zeros((len(rows), w), dtype=torch.long)
        for i, r in enumerate(rows):
            x[i, :len(r)] = torch.tensor(r); m[i, :len(r)] = 1
        logits = model(input_ids=x, attention_mask=m).logits[:, :-1].float()
        loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), x[:, 1:], reduction="none")
        mask = m[:, 1:].bool()
        nll[order[s:s + batch]] = ((loss * mask).sum(1) / mask.sum(1)).numpy()
np.save(out, np.exp(nll))
print(json.dumps({"score_seconds": time.perf_counter() - start, "texts": len(texts)}))
'''


def build_model(path: Path) -> Path:
    if (path / "config.json").exists():
        return path
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from tests.operators.score.tiny_lm import _tokenizer

    tokenizer = _tokenizer(max_length=256)
    torch.manual_seed(0)
    GPT2LMHeadModel(GPT2Config(vocab_size=len(tokenizer), n_positions=256, n_embd=256, n_layer=4, n_head=4,
                               bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def part_perplexity(work: Path, docs: int, repeats: int) -> tuple[str, list]:
    import pyarrow.parquet as pq

    from curate.demo import generate

    folder = h.DATA / f"ppl-{docs}"
    if not (folder / "done").exists():
        generate(folder, docs=docs, files=2, seed=0)
        (folder / "done").write_text("")
    files = sorted(folder.glob("part-*.jsonl.gz"))
    model = build_model(h.DATA / "ppl-gpt2-4x256")
    batch, max_len = 16, 256
    (work / "bare.py").write_text(BARE)
    rec = recipe(work / "ppl.yaml", str(folder / "part-*.jsonl.gz"), work / "ppl-out",
                 [f"perplexity: {{model: {json.dumps(str(model))}, batch_size: {batch}, max_length: {max_len}, device: cpu}}"])
    runs = {"curate run (perplexity step)": [], "bare batched torch loop": []}
    step_s, bare_s = [], []
    env = {"OMP_NUM_THREADS": "1"}
    for r in range(repeats):
        for side in (list(runs) if r % 2 == 0 else list(runs)[::-1]):
            if side.startswith("curate"):
                m = h.run_measured([*h.CURATE, "run", str(rec), "--workers", "1", "--overwrite", "--no-report"],
                                   env=env, log=work / "ppl-curate.log")
                h.require_ok(m, side)
                step_s.append(h.step_entry(work / "ppl-out", "perplexity").seconds)
            else:
                m = h.run_measured([sys.executable, str(work / "bare.py"), str(model), ",".join(map(str, files)),
                                    str(batch), str(max_len), str(work / "bare.npy")], env=env, log=work / "ppl-bare.log")
                h.require_ok(m, side)
                bare_s.append(json.loads(m.output.strip().splitlines()[-1])["score_seconds"])
            runs[side].append((m.seconds, m.cpu_seconds))
    ours = np.array(pq.read_table(work / "ppl-out" / "data", columns=["quality_perplexity"]).column(0).to_pylist(),
                    dtype=float)
    bare = np.load(work / "bare.npy")
    agree = float(np.max(np.abs(ours - bare) / bare))
    rows = []
    med = {k: (statistics.median(s for s, _ in v), statistics.median(c for _, c in v)) for k, v in runs.items()}
    inner = {"curate run (perplexity step)": statistics.median(step_s), "bare batched torch loop": statistics.median(bare_s)}
    for k, (w, c) in med.items():
        rows.append([k, f"{w:.1f}", f"{c:.1f}", f"{docs / w:.1f}", f"{inner[k]:.1f}", f"{docs / inner[k]:.1f}"])
    bare_k, ours_k = "bare batched torch loop", "curate run (perplexity step)"
    whole = med[bare_k][0] / med[ours_k][0]
    scoring = inner[bare_k] / inner[ours_k]
    body = (f"{docs:,} demo documents, GPT-2 from a config (4 layers x 256, vocab {300}), batch {batch}, max length "
            f"{max_len}, CPU, one torch thread and one model worker on each side, medians of {repeats} rounds. "
            f"Scoring seconds: curate's perplexity step in the manifest (model load excluded) vs the bare script's "
            f"timer around tokenize+batches. Largest relative difference of the perplexities: {agree:.1e}.\n\n"
            + h.table(["side", "wall s", "CPU s", "texts / wall s", "scoring s", "texts / scoring s"], rows)
            + f"\n\ncurate's throughput as a share of the bare loop's: {whole:.0%} whole process, {scoring:.0%} "
              f"scoring only (target >= 90%). No GPU is lent to this task: CPU figures only.")
    heads = [["perplexity: curate vs bare batched torch loop (throughput)", f"{whole:.0%} (process), {scoring:.0%} (scoring)",
              "", "target >= 90%; CPU, tiny GPT-2"]]
    return body, heads


# ---------------------------------------------------------------- 4. report size at 1M rows
def part_report(work: Path, rows: int, workers: int) -> tuple[str, list]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = h.DATA / f"report-{rows}"
    if not (src / "done").exists():
        src.mkdir(parents=True, exist_ok=True)
        rng = np.random.default_rng(0)
        per = 125_000
        for i in range(0, rows, per):
            n = min(per, rows - i)
            words = rng.integers(5, 400, n)
            pq.write_table(pa.table({
                "id": [f"r{j}" for j in range(i, i + n)],
                "text": [f"document {j} with about {w} words" for j, w in zip(range(i, i + n), words)],
                "quality_heuristic": rng.beta(5, 1, n), "quality_perplexity": rng.lognormal(3, 0.5, n),
                "complexity_words": words.astype(float), "complexity_mattr": rng.uniform(0.4, 0.95, n),
                "diversity_novelty": rng.beta(2, 5, n)}), src / f"part-{i // per:03d}.parquet")
        (src / "done").write_text("")
    rec = work / "report.yaml"
    rec.write_text("\n".join([
        "name: report-1m", f"input: {{path: {json.dumps(str(src / 'part-*.parquet'))}, text_column: text, id_column: id}}",
        f"output: {{path: {json.dumps(str(work / 'report-out'))}}}", "steps:",
        "  - sql_filter: {where: \"quality_heuristic > 0.7\"}", "  - exact_dedup: {}"]) + "\n")
    m = h.curate_run(rec, "--workers", str(workers), "--overwrite", "--no-report", log=work / "report-run.log")
    h.require_ok(m, "curate run")
    r = h.run_measured([*h.CURATE, "report", str(work / "report-out")], log=work / "report.log")
    h.require_ok(r, "curate report")
    size = (work / "report-out" / "report.html").stat().st_size
    removed = h.manifest(work / "report-out").steps[1].removed
    body = (f"A run over {rows:,} rows (5 score columns; sql_filter removes {removed:,} rows "
            f"into the trace; exact_dedup), then `curate report` on it.\n\n"
            + h.table(["rows", "rows in the trace", "report.html", "curate report wall s", "CPU s", "run wall s"],
                      [[f"{rows:,}", f"{removed:,}", f"{size / 1e6:.2f} MB", f"{r.seconds:.1f}",
                        f"{r.cpu_seconds:.1f}", f"{m.seconds:.1f}"]])
            + "\n\nThe size is plotly.js's basic bundle (1.19 MB) plus aggregated figures: it does not grow with rows.")
    return body, [[f"report.html of a {rows // 1000}k-row run", f"{size / 1e6:.2f} MB, {r.seconds:.1f} s", f"{r.cpu_seconds:.1f} s",
                   "target < 5 MB"]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs-files", type=int, default=7)
    ap.add_argument("--ppl-docs", type=int, default=2000)
    ap.add_argument("--report-rows", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--parts", default="select,overhead,perplexity,report")
    h.add_section_args(ap)
    a = ap.parse_args()
    work = h.RUNS / "qdc"
    work.mkdir(parents=True, exist_ok=True)
    parts = a.parts.split(",")
    bodies, heads = [], []
    titles = {"select": "qdc_select vs random vs top-quality (planted corpus)",
              "overhead": "Heuristic scores on the quickstart", "perplexity": "Perplexity vs a bare batched torch loop",
              "report": "report.html at 1M rows"}
    for part in parts:
        started = time.perf_counter()
        if part == "select":
            body, head = part_select(work)
        elif part == "overhead":
            body, head = part_overhead(work, a.docs_files, a.workers, a.repeats)
        elif part == "perplexity":
            body, head = part_perplexity(work, a.ppl_docs, a.repeats)
        elif part == "report":
            body, head = part_report(work, a.report_rows, a.workers)
        else:
            raise SystemExit(f"unknown part {part}")
        print(f"{part}: {time.perf_counter() - started:.0f}s", file=sys.stderr)
        bodies.append(f"### {titles[part]}\n\n{body}")
        heads += head
    h.emit(a, "\n\n".join(bodies), heads)


if __name__ == "__main__":
    main()
