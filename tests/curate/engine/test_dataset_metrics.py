"""The run's dataset metrics (recipe `metrics:`): summaries the tasks make as they run, merged
in the manifest, the same whatever the files, tasks, batches and workers, and after a resume."""

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from curate import recipe
from curate.engine.run.runner import RunOptions, run
from curate_operators.score import metrics
from tests.conftest import write_jsonl
from tests.curate.engine import faultkit

STEPS = """
steps:
  - sql_filter: {where: "n % 7 <> 3"}
  - exact_dedup: {}
  - embed: {backend: hash, dim: 16}
"""
METRICS = "metrics: {sample: 40, bleu_sample: 10, clusters: 3, sketch: 64}\n"


def rows(count: int = 600) -> list[dict]:
    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(30)]
    return [{"id": f"doc{i}", "n": i, "text": " ".join(rng.choice(words, rng.integers(3, 12))) if i % 5 else "the same"}
            for i in range(count)]


def write(root: Path, files: int) -> str:
    data = rows()
    for f, part in enumerate(np.array_split(np.arange(len(data)), files)):
        write_jsonl(root / f"part-{f}.jsonl.gz", [data[i] for i in part])
    return str(root / "*.jsonl.gz")


def config(inp: str, out: Path, batch_rows: int = 64, metrics_line: str = METRICS) -> str:
    return (f"input: {{path: '{inp}', id_column: id, batch_rows: {batch_rows}}}\noutput: {{path: '{out}'}}\n"
            + metrics_line + STEPS)


def measured(manifest) -> dict:
    return {k: v for k, v in manifest.entry("dataset_metrics").items() if k != "cpu_seconds"}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    root = tmp_path_factory.mktemp("metrics")
    inp = write(root / "one", 1)
    return run(recipe.load(text=config(inp, root / "out")), RunOptions(workers=1)), root / "out"


def test_input_and_output_are_measured_in_the_manifest(reference, manifest_at):
    manifest, out = reference
    m = manifest.entry("dataset_metrics")
    assert m["input"]["rows"] == manifest.rows_in == 600
    assert m["output"]["rows"] == manifest.rows_out < 600
    texts = pq.read_table(out / "data").column("text").to_pylist()
    everything = [r["text"] for r in rows()]
    for side, measured_texts in (("output", texts), ("input", everything)):
        # 30 words: fewer than the sketch's 64 values, counted exactly; n-grams estimated
        assert m[side]["distinct_1"] == pytest.approx(metrics.distinct_n(measured_texts, 1), abs=1e-6)
        for n in (2, 3, 4):
            assert m[side][f"distinct_{n}"] == pytest.approx(metrics.distinct_n(measured_texts, n), rel=4 / 62 ** 0.5)
    # the output's rows had an embedding when written (dropped from data/ as internal): measured
    assert "vendi" in m["output"] and "vendi" not in m["input"]
    assert m["output"]["sample"] == m["input"]["sample"] == 40
    assert m["settings"]["sketch"] == 64 and m["cpu_seconds"] > 0
    assert manifest_at(out).entry("dataset_metrics") == m


@pytest.mark.parametrize("files, batch_rows, workers", [(4, 64, 2), (3, 200, 1), (6, 17, 2)])
def test_the_same_rows_measure_the_same_whatever_the_split(reference, tmp_path, files, batch_rows, workers):
    inp = write(tmp_path / "in", files)
    manifest = run(recipe.load(text=config(inp, tmp_path / "out", batch_rows)), RunOptions(workers=workers))
    assert measured(manifest) == measured(reference[0])


def test_off_unless_the_recipe_asks(tmp_path):
    inp = write(tmp_path / "in", 1)
    for line in ("", "metrics: false\n"):
        manifest = run(recipe.load(text=config(inp, tmp_path / "out", metrics_line=line)),
                       RunOptions(workers=1, overwrite=True))
        assert manifest.entry("dataset_metrics") is None


@pytest.mark.parametrize("point", ["task-done@2", "stage-done", "fit"])
def test_a_resumed_run_merges_the_same_summaries(reference, tmp_path, point, manifest_at):
    inp = write(tmp_path / "in", 4)
    path = tmp_path / "recipe.yaml"
    path.write_text(config(inp, tmp_path / "out"))
    proc = faultkit.start(path, failpoint=point)
    assert faultkit.wait_for_failpoint(proc), proc.stderr.read().decode()
    faultkit.kill(proc, whole_group=True)
    assert (tmp_path / "out" / "_work").is_dir()
    resumed = faultkit.start(path, "--resume")
    assert resumed.wait() == 0, resumed.stderr.read().decode()
    assert measured(manifest_at(tmp_path / "out")) == measured(reference[0])
