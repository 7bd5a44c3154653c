"""semantic_dedup then density_prune through the runner, on a Parquet input that already holds
`_embedding` (as an embed step, or an earlier run with output.keep_columns, would leave it)."""


import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate import recipe
from curate.engine.run.runner import RunOptions, run
from curate.errors import CurateError
from tests.operators.prune.data import clustered, embedding_array


def write_input(path, x, parts=3):
    path.mkdir(parents=True)
    n = len(x)
    for i, start in enumerate(range(0, n, -(-n // parts))):
        stop = min(n, start + -(-n // parts))
        pq.write_table(pa.table({"id": [f"d{j}" for j in range(start, stop)],
                                 "text": [f"doc {j}" for j in range(start, stop)],
                                 "_embedding": embedding_array(x[start:stop])}), path / f"part-{i}.parquet")


def test_semantic_dedup_then_density_prune(tmp_path, manifest_at):
    rng = np.random.default_rng(0)
    x = clustered(0, 2000, 16, centers=8).astype(np.float64)
    x[1800:] = x[:200] + 1e-4 * rng.normal(size=(200, 16))  # rows 1800.. copy rows 0..199
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float16)
    write_input(tmp_path / "in", x)
    r = recipe.load(text=f"""
seed: 3
input: {{path: '{tmp_path / "in"}', id_column: id, batch_rows: 256}}
output: {{path: '{tmp_path / "out"}', keep_columns: [_cluster]}}
steps:
  - semantic_dedup: {{eps: 0.01, k: 4}}
  - density_prune: {{fraction: 0.5, k: 6, columns: true}}
""")
    manifest = run(r, RunOptions(workers=1))
    out = tmp_path / "out"
    data = pq.read_table(out / "data")
    steps = {s.op: s for s in manifest.steps}
    dedup, prune = steps["semantic_dedup"], steps["density_prune"]
    assert 200 <= dedup.removed <= 230 and dedup.reasons == {"semantic_duplicate": dedup.removed}
    assert prune.rows_in == dedup.rows_out and prune.rows_out == int(prune.rows_in * 0.5 + 0.5)
    assert data.num_rows == prune.rows_out
    assert "_embedding" not in data.column_names and "prune_dist_to_centroid" in data.column_names
    assert set(data.column("_cluster").to_pylist()) <= set(range(6))
    trace = pq.read_table(out / "trace" / "01_semantic_dedup.parquet")
    gone = set(trace.column("_id").to_pylist())
    assert all(f"d{i}" in gone or f"d{1800 + i}" in gone for i in range(200))  # one of each copy pair
    assert all(" to d" in d for d in trace.column("detail").to_pylist())
    pruned = pq.read_table(out / "trace" / "02_density_prune.parquet")
    assert set(pruned.column("reason").to_pylist()) == {"density_pruned"}
    assert pruned.column("detail")[0].as_py().startswith("cluster ")
    for step in manifest.steps:
        assert step.rows_in == step.rows_out + step.removed
    assert manifest_at(out).rows_out == data.num_rows
    # The fits' reports are in the manifest: kept counts per eps, the per-cluster table.
    assert dedup.summary["kept_by_eps"]["0.01"] == dedup.rows_out
    clusters = prune.summary["clusters"]
    assert clusters["cluster"] == list(range(6)) and sum(clusters["kept"]) == prune.rows_out


def test_a_missing_embedding_column_is_a_clear_error(tmp_path):
    (tmp_path / "in").mkdir()
    pq.write_table(pa.table({"text": ["a", "b"]}), tmp_path / "in" / "x.parquet")
    r = recipe.load(text=f"""
input: {{path: '{tmp_path / "in"}'}}
output: {{path: '{tmp_path / "out"}'}}
steps:
  - semantic_dedup: {{}}
""")
    with pytest.raises(CurateError, match="semantic_dedup needs column '_embedding'"):
        run(r, RunOptions(workers=1))


def test_ops_lists_the_params(cli):
    result = cli("ops", "semantic_dedup")
    assert result.exit_code == 0 and "eps_report" in result.stdout
    result = cli("ops", "density_prune")
    assert result.exit_code == 0 and "temperature" in result.stdout and "clustersize" in result.stdout


def _one_step_run(tmp_path, inp, out, step="semantic_dedup: {eps: 0.01, k: 4}"):
    return recipe.load(text=f"""
seed: 3
input: {{path: '{inp}', id_column: id, batch_rows: 256}}
output: {{path: '{out}'}}
steps:
  - {step}
""")


@pytest.mark.parametrize("step", ["semantic_dedup: {eps: 0.01, k: 4}", "density_prune: {fraction: 0.5, k: 6}"])
def test_a_list_of_floats_embedding_column_is_accepted_as_its_fixed_size_list(tmp_path, step):
    """Embeddings written as list<float> (pandas, polars, a JSON round trip do) give what the same
    embeddings as fixed_size_list give."""
    rng = np.random.default_rng(1)
    x = clustered(0, 600, 16, centers=4).astype(np.float64)
    x[500:] = x[:100] + 1e-4 * rng.normal(size=(100, 16))
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    write_input(tmp_path / "fixed", x)
    (tmp_path / "listed").mkdir()
    for part in sorted((tmp_path / "fixed").iterdir()):
        t = pq.read_table(part)
        listed = pa.array(t.column("_embedding").to_pylist(), pa.list_(pa.float32()))
        pq.write_table(t.set_column(2, "_embedding", listed), tmp_path / "listed" / part.name)
    kept = []
    for name in ("fixed", "listed"):
        run(_one_step_run(tmp_path, tmp_path / name, tmp_path / f"out-{name}", step), RunOptions(workers=1))
        kept.append(pq.read_table(tmp_path / f"out-{name}" / "data").column("id").to_pylist())
    assert kept[0] == kept[1] and len(kept[0]) < 600


def test_an_embedding_column_of_another_type_is_refused_at_validation(tmp_path):
    from curate import preflight
    from curate.errors import RecipeError

    (tmp_path / "in").mkdir()
    pq.write_table(pa.table({"id": ["a", "b"], "_embedding": [["x", "y"], ["z", "w"]]}), tmp_path / "in" / "x.parquet")
    r = _one_step_run(tmp_path, tmp_path / "in", tmp_path / "out")
    with pytest.raises(RecipeError, match=r"embedding_column.*list<\w+: string>"):
        preflight.check(r)


def test_ragged_list_embeddings_are_a_clear_error(tmp_path):
    (tmp_path / "in").mkdir()
    pq.write_table(pa.table({"id": ["a", "b"], "_embedding": pa.array([[1.0, 0.0], [1.0, 0.0, 0.0]],
                                                                        pa.list_(pa.float32()))}),
                   tmp_path / "in" / "x.parquet")
    with pytest.raises(CurateError, match="same size"):
        run(_one_step_run(tmp_path, tmp_path / "in", tmp_path / "out"), RunOptions(workers=1))
