"""What the dedup benches share: the planted corpus, curate's dedup steps through `curate run`, the anchors.

Every tool runs as its own process tree through harness.run_measured (wall, CPU seconds of the tree, peak
RSS) and reports the set of document ids it removed.
"""

from __future__ import annotations

import sys
from pathlib import Path

# bench/ first on the path (harness, anchors, corpora and sections are imported from it), and not this script's
# folder: bench/sections/ holds io.py, ray.py and tokenize.py, which would stand in for the modules of those names.
sys.path[:] = [str(Path(__file__).resolve().parents[1]),
               *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

import json

import pyarrow.dataset as ds
import pyarrow.parquet as pq

from corpora import dedup_corpus
import harness as h

ANCHOR_PY = h.VENVS / "dedup" / "bin" / "python"

# curate's minhash_dedup defaults, spelled out so the anchors can be given the same ones.
SHINGLE = {"shingle": "word", "ngram": 5, "lowercase": True}
BANDS, ROWS = 14, 8


def corpus(docs: int, seed: int = 0) -> Path:
    """The planted corpus (bench/corpora/dedup_corpus.py) as Parquet shards, generated once."""
    data = h.DATA / f"dedup-{docs}-s{seed}" / "data"
    if not data.exists():
        dedup_corpus.write(dedup_corpus.generate(docs, seed), data, shards=max(8, docs // 125_000))
    return data


def ids(data: Path, column: str = "id") -> set[str]:
    return set(ds.dataset(str(data), format="parquet").to_table(columns=[column]).column(column).to_pylist())


def step_params(op: str, workers: int, tau: float = 0.8) -> dict:
    params = {**SHINGLE, "workers": workers}
    if op == "minhash_dedup":
        params.update(bands=BANDS, rows_per_band=ROWS)
    else:
        params.update(threshold=tau)
    return params


class Run:
    """One tool's run: its measurement, the ids it removed, and where known: the ids in a duplicate cluster,
    (curate) each removed id's kept member and estimated Jaccard, (datatrove) each clustered id's cluster."""

    def __init__(self, measured: h.Measured, removed: set[str], clustered: set[str] | None = None,
                 pairs: list[tuple[str, str, float]] | None = None, clusters: dict[str, int] | None = None):
        self.m, self.removed, self.clustered, self.pairs, self.clusters = measured, removed, clustered, pairs, clusters


def run_curate(op: str, data: Path, work: Path, workers: int, tau: float = 0.8) -> Run:
    """`curate run` of a one-step recipe over the corpus files. Removed: the ids not in its output;
    clustered: removed ids and the ids their trace rows name as kept (`duplicate_of`, minhash_dedup)."""
    out = work / "out"
    params = ", ".join(f"{k}: {json.dumps(v)}" for k, v in step_params(op, workers, tau).items())
    recipe = work / "recipe.yaml"
    work.mkdir(parents=True, exist_ok=True)
    recipe.write_text(f"name: bench-{op}\n"
                      f"input: {{path: {json.dumps(str(data / '*.parquet'))}, text_column: text, id_column: id}}\n"
                      f"output: {{path: {json.dumps(str(out))}}}\n"
                      f"steps:\n  - {op}: {{{params}}}\n")
    m = h.curate_run(recipe, "--workers", str(workers), "--overwrite", log=work / "curate.log")
    h.require_ok(m, f"curate run ({op})")
    removed = ids(data) - ids(out / "data")
    clustered = pairs = None
    trace = out / "trace" / f"01_{op}.parquet"
    if op == "minhash_dedup" and trace.exists():
        t = pq.read_table(trace, columns=["_id", "detail"])
        pairs = [(i, d["duplicate_of"], d["jaccard_estimate"])
                 for i, d in zip(t.column("_id").to_pylist(), map(json.loads, t.column("detail").to_pylist()))]
        clustered = removed | {k for _, k, _ in pairs}
    return Run(m, removed, clustered, pairs)


def run_anchor(tool: str, data: Path, work: Path, workers: int) -> Run | str:
    """The anchor's Run, or why it did not run."""
    if not ANCHOR_PY.exists():
        return f"{ANCHOR_PY} is missing (bash bench/anchors/setup_dedup.sh creates it)"
    work.mkdir(parents=True, exist_ok=True)
    m = h.run_measured([str(ANCHOR_PY), str(h.BENCH / "anchors/dedup_minhash.py"), tool, str(data), str(work / "run"),
                        "--workers", str(workers), "--bands", str(BANDS), "--rows", str(ROWS),
                        "--ngram", str(SHINGLE["ngram"])], log=work / f"{tool}.log")
    if m.returncode != 0:
        tail = m.output.strip().splitlines()[-1:] or [""]
        return f"failed with exit {m.returncode} after {m.seconds:.0f}s: {tail[0][:300]}"
    result = json.loads(m.output.strip().splitlines()[-1])
    clusters = result.get("clusters")
    return Run(m, set(result["removed"]), None if clusters is None else set(clusters), clusters=clusters)


def check_tokens(data: Path, docs: int = 5000) -> dict | None:
    """Whether datatrove's matched setting splits the same words as curate (bench/anchors/dedup_minhash.py check-tokens)."""
    if not ANCHOR_PY.exists():
        return None
    import subprocess

    out = subprocess.run([str(ANCHOR_PY), str(h.BENCH / "anchors/dedup_minhash.py"), "check-tokens", str(data), str(docs)],
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else None


def pair_agreement(ours: Run, theirs: Run) -> list[list[str]]:
    """Of curate's (removed, kept) pairs, by estimated Jaccard band: how many datatrove put in one cluster."""
    bands = [(0.9, 1.01, ">= 0.9"), (0.72, 0.9, "0.72-0.9 (0.72 ~ (1/14)^(1/8), the LSH threshold)"), (0.0, 0.72, "< 0.72")]
    rows = []
    for lo, hi, label in bands:
        sel = [(a, b) for a, b, j in ours.pairs if lo <= j < hi]
        together = sum(1 for a, b in sel if a in theirs.clusters and theirs.clusters[a] == theirs.clusters.get(b))
        rows.append([label, f"{len(sel):,}", f"{together:,}", f"{together / len(sel):.1%}" if sel else "-"])
    return rows


def jaccard(a: set, b: set) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0
