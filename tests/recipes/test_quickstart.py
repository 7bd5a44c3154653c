"""recipes/quickstart.yaml over a small demo corpus: the run's files, conservation, identical bytes."""

import hashlib
import re
from pathlib import Path

import pyarrow.parquet as pq

from curate.demo import generate

RECIPE = Path(__file__).resolve().parents[2] / "recipes" / "quickstart.yaml"


def digests(out: Path) -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((out / "data").glob("*.parquet"))]


def test_quickstart_runs_conserves_rows_and_repeats_byte_for_byte(cli, tmp_path, manifest_at):
    generate(tmp_path / "demo", docs=1500, files=3, seed=0)
    for name in ("a", "b"):
        res = cli("run", RECIPE, "--input", f"{tmp_path}/demo/*.jsonl.gz", "--output", tmp_path / name, "-w", "2")
        assert res.exit_code == 0, res.output
    out = tmp_path / "a"
    manifest = manifest_at(out)
    assert list((out / "data").glob("part-*.parquet")) and list((out / "trace").glob("*.parquet"))
    for step in manifest.steps:
        assert step.rows_in == step.rows_out + step.removed
        if step.removed:
            assert pq.read_metadata(out / "trace" / f"{step.step}.parquet").num_rows == step.removed
    removed = {s.op: s.removed for s in manifest.steps}
    assert removed["gopher_quality"] > 0 and removed["exact_dedup"] > 0  # planted junk and duplicates are found
    assert manifest.rows_out == pq.read_table(out / "data").num_rows
    assert digests(tmp_path / "a") == digests(tmp_path / "b")
    # The README's run-directory listing names files this run wrote.
    readme = (RECIPE.parents[1] / "README.md").read_text()
    listed = set(re.findall(r"^ *(trace/\d\d_\w+\.parquet)", readme, re.M)) - {"trace/00_read.parquet"}
    assert listed and all((out / name).is_file() for name in listed), listed
