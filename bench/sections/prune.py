"""Scale of semantic_dedup + density_prune: 250k / 500k / 1M x 384 float16 embeddings.

    python bench/sections/prune.py [--sizes 250000,500000,1000000] [--dim 384] [--workers 2]
    python bench/sections/prune.py --sizes 2000000 --dim 512     # a point toward 10M x 512

Synthetic clustered data (2000 Gaussian blobs around random directions; 10% of the rows are
near-copies, cosine ~0.999, of other rows of their file) is written once to Parquet under
bench/.data/prune-N-D/ (8 files of `id` + `_embedding`, fixed_size_list<halffloat>[D]). Each size
is one full `curate run` (subprocess) of the recipe

    steps: [semantic_dedup: {eps: 0.01}, density_prune: {fraction: 0.5}]

with the defaults (semantic_dedup: k = rows/1000, niter 20; density_prune: k = 100, niter 100),
so the figures include reading and writing the shards and both apply passes, not only the fits.
Wall and CPU seconds and peak RSS are of the whole process tree (bench/harness/); the
per-phase seconds of each fit come from its summary.json (the run keeps its _work).
Targets (the issue): 1M in under 10 minutes on 2 cores with peak RSS under 4 GB.
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

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import harness as h

FILES, CENTERS, DUP_FRACTION = 8, 2000, 0.10


def dataset(rows: int, dim: int):
    def make(folder):
        rng = np.random.default_rng(0)
        centers = h.unit_rows(rng, CENTERS, dim)
        per = -(-rows // FILES)
        for i in range(FILES):
            start, stop = i * per, min(rows, (i + 1) * per)
            m = stop - start
            x = centers[rng.integers(0, CENTERS, m)] + rng.normal(scale=0.05, size=(m, dim)).astype(np.float32)
            copies = rng.choice(m, int(m * DUP_FRACTION), replace=False)
            x[copies] = x[rng.integers(0, m, len(copies))] + rng.normal(scale=0.001, size=(len(copies), dim))
            pq.write_table(pa.table({"id": pa.array(np.arange(start, stop)).cast(pa.string()),
                                     "_embedding": h.half_embeddings(x)}),
                           folder / f"part-{i:02d}.parquet", compression="none")

    return h.made_once(h.DATA / f"prune-{rows}-{dim}", {"rows": rows, "dim": dim}, make)


def recipe(folder, out):
    path = h.RUNS / "prune" / f"{folder.name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"""name: prune-scale
input: {{path: {json.dumps(str(folder / '*.parquet'))}, id_column: id}}
output: {{path: {json.dumps(str(out))}}}
steps:
  - semantic_dedup: {{eps: 0.01}}
  - density_prune: {{fraction: 0.5}}
""")
    return path


def fit_summaries(out) -> dict[str, dict]:
    found = {}
    for path in sorted((out / "_work").glob("stage-*/fit/summary.json")):
        s = json.loads(path.read_text())
        found["semantic_dedup" if "eps" in s else "density_prune"] = s
    return found


def phases(summary: dict) -> str:
    return "/".join(f"{summary['seconds'][k]:.0f}" for k in ("spill", "kmeans_train", "kmeans_assign", "decide"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="250000,500000,1000000")
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--workers", type=int, default=2)
    h.add_section_args(ap)
    args = ap.parse_args()
    rows_out, measured = [], []
    for rows in map(int, args.sizes.split(",")):
        folder = dataset(rows, args.dim)
        out = h.RUNS / "prune" / f"out-{rows}"
        m = h.curate_run(recipe(folder, out), "--overwrite", "--keep-work", "--workers", str(args.workers),
                         log=h.RUNS / "prune" / f"{rows}.log")
        h.require_ok(m, f"prune run of {rows} rows")
        steps = {s.op: s for s in h.manifest(out).steps}
        fits = fit_summaries(out)
        sd, dp = fits["semantic_dedup"], fits["density_prune"]
        rows_out.append([f"{rows:,}", f"{m.seconds:.0f}", f"{m.cpu_seconds:.0f}", f"{m.peak_rss_gb:.2f}",
                         f"{steps['semantic_dedup'].seconds:.0f} (k={sd['k']}: {phases(sd)})",
                         f"{steps['density_prune'].seconds:.0f} (k={dp['k']}: {phases(dp)})",
                         f"{sd['kept']:,} -> {dp['kept']:,}", h.load()])
        measured.append((rows, m.seconds, m.peak_rss_gb))
        print(rows_out[-1], flush=True)
    headers = ["rows", "wall s", "CPU s", "peak RSS GB", "semantic_dedup s (spill/train/assign/decide)",
               "density_prune s (spill/train/assign/decide)", "kept", "load 1/5/15"]
    body = (f"Machine: {h.machine()}\n\nSynthetic clustered {args.dim}-d float16 embeddings (Parquet), "
            f"`curate run` of semantic_dedup then density_prune (each fits its own k-means), --workers {args.workers}."
            f"\n\n{h.table(headers, rows_out)}\n\n{extrapolation(measured, args.dim)}\n")
    last = rows_out[-1]
    h.emit(args, body, [[f"k-means + semantic_dedup + density_prune, {last[0]} x {args.dim}", f"{last[1]} s",
                         f"{last[2]} CPU-s, {last[3]} GB", "target < 600 s and < 4 GB at 1M x 384"]])


def extrapolation(measured: list[tuple[int, float, float]], dim: int) -> str:
    """10M x 512 from the measured growth: time by a least-squares power law over the sizes run
    (scaled by 512/dim for the per-row vector work), memory by the largest run's RSS per row."""
    import numpy as np

    if len(measured) < 2:
        return "(one size only: no extrapolation)"
    rows, seconds, rss = map(np.array, zip(*measured))
    slope, intercept = np.polyfit(np.log(rows), np.log(seconds), 1)
    t10m = float(np.exp(intercept) * 1e7 ** slope) * 512 / dim
    spill_gb = 1e7 * 512 * 2 / 2**30
    return (f"Growth: wall time ~ rows^{slope:.2f} over {', '.join(f'{r:,}' for r in rows)} rows. "
            f"10M x 512 extrapolated: about {t10m / 60:.0f} minutes on these 2 cores (time scaled by 512/{dim} "
            f"for the vector work); the embeddings spill to a memory-mapped {spill_gb:.1f} GB float16 file, so "
            f"peak RSS is bounded by the fit's working set (measured {rss[-1]:.2f} GB at {rows[-1]:,} rows), "
            f"not by the data.")


if __name__ == "__main__":
    main()
