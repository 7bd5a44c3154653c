"""Scale of semantic_dedup + density_prune: 250k / 500k / 1M x 384 float16 embeddings.

    python bench/prune_scale.py [--sizes 250000,500000,1000000] [--dim 384] [--workers 2]
    python bench/prune_scale.py --sizes 2000000 --dim 512     # a point toward 10M x 512

Synthetic clustered data (2000 Gaussian blobs around random directions; 10% of the rows are
near-copies, cosine ~0.999, of other rows of their file) is written once to Parquet under
bench/.data/prune-N-D/ (8 files of `id` + `_embedding`, fixed_size_list<halffloat>[D]). Each size
is one full `curate run` (subprocess) of the recipe

    steps: [semantic_dedup: {eps: 0.01}, density_prune: {fraction: 0.5}]

with the defaults (semantic_dedup: k = rows/1000, niter 20; density_prune: k = 100, niter 100),
so the figures include reading and writing the shards and both apply passes, not only the fits.
Wall and CPU seconds and peak RSS are of the whole process tree (bench/harness.py); the
per-phase seconds of each fit come from its summary.json (the run keeps its _work).
Targets (the issue): 1M in under 10 minutes on 2 cores with peak RSS under 4 GB.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import harness as h

FILES, CENTERS, DUP_FRACTION = 8, 2000, 0.10


def dataset(rows: int, dim: int):
    folder = h.DATA / f"prune-{rows}-{dim}"
    marker = folder / "done.json"
    if marker.exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(CENTERS, dim)).astype(np.float32)
    centers /= np.linalg.norm(centers, axis=1, keepdims=True)
    per = -(-rows // FILES)
    for i in range(FILES):
        start, stop = i * per, min(rows, (i + 1) * per)
        m = stop - start
        x = centers[rng.integers(0, CENTERS, m)] + rng.normal(scale=0.05, size=(m, dim)).astype(np.float32)
        copies = rng.choice(m, int(m * DUP_FRACTION), replace=False)
        x[copies] = x[rng.integers(0, m, len(copies))] + rng.normal(scale=0.001, size=(len(copies), dim))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        emb = pa.FixedSizeListArray.from_arrays(pa.array(x.astype(np.float16).ravel(), pa.float16()), dim)
        pq.write_table(pa.table({"id": pa.array(np.arange(start, stop)).cast(pa.string()), "_embedding": emb}),
                       folder / f"part-{i:02d}.parquet", compression="none")
    marker.write_text(json.dumps({"rows": rows, "dim": dim}))
    return folder


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
    args = ap.parse_args()
    rows_out = []
    for rows in map(int, args.sizes.split(",")):
        folder = dataset(rows, args.dim)
        out = h.RUNS / "prune" / f"out-{rows}"
        m = h.curate_run(recipe(folder, out), "--overwrite", "--keep-work", "--workers", str(args.workers),
                         log=h.RUNS / "prune" / f"{rows}.log")
        h.require_ok(m, f"prune run of {rows} rows")
        steps = {s["op"]: s for s in json.loads((out / "manifest.json").read_text())["steps"]}
        fits = fit_summaries(out)
        sd, dp = fits["semantic_dedup"], fits["density_prune"]
        rows_out.append([f"{rows:,}", f"{m.seconds:.0f}", f"{m.cpu_seconds:.0f}", f"{m.peak_rss_gb:.2f}",
                         f"{steps['semantic_dedup']['seconds']:.0f} (k={sd['k']}: {phases(sd)})",
                         f"{steps['density_prune']['seconds']:.0f} (k={dp['k']}: {phases(dp)})",
                         f"{sd['kept']:,} -> {dp['kept']:,}", h.load()])
        print(rows_out[-1], flush=True)
    headers = ["rows", "wall s", "CPU s", "peak RSS GB", "semantic_dedup s (spill/train/assign/decide)",
               "density_prune s (spill/train/assign/decide)", "kept", "load 1/5/15"]
    print(f"\nMachine: {h.machine()}\n\nCommand: `python {' '.join(shlex.quote(a) for a in sys.argv)}`\n")
    print(h.table(headers, rows_out))


if __name__ == "__main__":
    main()
