"""recipes/near-dedup.yaml over the demo corpus: case/space variants are caught, with their containers."""

import re
from pathlib import Path

import pyarrow.parquet as pq

from curate.demo import DUPLICATE_NORMALIZED, generate

RECIPE = Path(__file__).resolve().parents[2] / "recipes" / "near-dedup.yaml"


def test_near_dedup_recipe_removes_case_and_space_variants(cli, tmp_path, manifest_at):
    generate(tmp_path / "demo", docs=1500, files=3, seed=0)
    out = tmp_path / "out"
    res = cli("run", RECIPE, "--input", f"{tmp_path}/demo/*.jsonl.gz", "--output", out, "-w", "2")
    assert res.exit_code == 0, res.output
    manifest = manifest_at(out)
    for step in manifest.steps:
        assert step.rows_in == step.rows_out + step.removed
    kept = pq.read_table(out / "data", columns=["_id", "planted"])
    assert DUPLICATE_NORMALIZED not in kept.column("planted").to_pylist()
    trace = pq.read_table(out / "trace" / "03_containment_dedup.parquet")
    assert trace.num_rows > 0  # exact_dedup keeps case variants: they are this step's to find
    ids = set(kept.column("_id").to_pylist())
    for detail in trace.column("detail").to_pylist():
        container, containment = re.fullmatch(r"contained in (.*) \(containment ([0-9.]+)\)", detail).groups()
        assert float(containment) >= 0.8 and container
    assert not ids & set(trace.column("_id").to_pylist())
