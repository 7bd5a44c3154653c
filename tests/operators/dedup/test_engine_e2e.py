"""containment_dedup and minhash_dedup through the local engine: trace, conservation, details."""

import json
import random

import pyarrow.parquet as pq

from curate import recipe
from curate.engine.run.runner import RunOptions, run
from tests.conftest import write_jsonl

VOCAB = [f"w{i}" for i in range(500)]


def test_recipe_with_both_near_dedup_steps(tmp_path):
    rnd = random.Random(0)
    docs = [" ".join(rnd.choice(VOCAB) for _ in range(rnd.randint(80, 200))) for _ in range(40)]
    rows = [{"id": f"d{i}", "text": t} for i, t in enumerate(docs)]
    rows += [{"id": f"x{i}", "text": " ".join(docs[i].split()[10:50]).upper()} for i in range(10)]  # excerpts
    rows += [{"id": f"c{i}", "text": docs[i] + " tail"} for i in range(10, 15)]  # near-copies, slightly larger
    write_jsonl(tmp_path / "in" / "part.jsonl", rows)
    r = recipe.load(text=f"""
input: {{path: '{tmp_path / "in" / "*.jsonl"}', id_column: id, batch_rows: 16}}
output: {{path: '{tmp_path / "out"}'}}
steps:
  - containment_dedup: {{threshold: 0.8}}
  - minhash_dedup: {{}}
""")
    manifest = run(r, RunOptions(workers=2, keep_work=True))
    out = tmp_path / "out"
    # The fits' pieces ran on the executor: a signing piece per batch of 16 (55 rows, then 40).
    fits = [json.loads(p.read_text()) for p in sorted((out / "_work").glob("stage-*/fit.json"))]
    assert [sorted(f["map"]) for f in fits] == [["group_pairs", "sign_batch", "verify_chunk"],
                                                ["group_links", "sign_batch"]]
    assert [f["map"]["sign_batch"]["pieces"] for f in fits] == [4, 3] and fits[0]["workers"] == 2
    kept = set(pq.read_table(out / "data").column("_id").to_pylist())
    trace = pq.read_table(out / "trace" / "01_containment_dedup.parquet")
    gone = dict(zip(trace.column("_id").to_pylist(), trace.column("detail").to_pylist()))
    # Excerpts and the smaller member of each near-copy pair are contained; the rest stays.
    assert set(gone) == {f"x{i}" for i in range(10)} | {f"d{i}" for i in range(10, 15)}
    assert gone["x3"] == "contained in d3 (containment 1.0)"
    assert gone["d12"].startswith("contained in c12 (containment ")
    assert set(trace.column("reason").to_pylist()) == {"contained"}
    assert kept == {r["id"] for r in rows} - set(gone)
    for step in manifest.steps:
        assert step.rows_in == step.rows_out + step.removed


def test_near_dedup_steps_after_a_filter_that_removes_every_row(tmp_path):
    # Their fits get no rows at all: they decide nothing rather than fail on files that do not exist.
    write_jsonl(tmp_path / "in" / "part.jsonl", [{"id": f"d{i}", "text": f"short text {i}"} for i in range(20)])
    r = recipe.load(text=f"""
input: {{path: '{tmp_path / "in" / "*.jsonl"}', id_column: id}}
output: {{path: '{tmp_path / "out"}'}}
allow_empty: true
steps:
  - sql_filter: {{where: "length(text) > 1000", reason: too_short}}
  - containment_dedup: {{}}
  - minhash_dedup: {{}}
""")
    manifest = run(r, RunOptions(workers=2))
    assert [(s.rows_in, s.removed) for s in manifest.steps[1:]] == [(20, 20), (0, 0), (0, 0)]
    assert manifest.rows_out == 0
    assert pq.read_table(tmp_path / "out" / "trace" / "01_sql_filter.parquet").num_rows == 20
