"""recipes/datacomp-*.yaml validate and run end to end on tiny synthetic shards with a tiny random
open_clip model and a tiny fastText language-ID model (tests/recipes/datacomp_inputs.py); each
output keeps only rows that pass every rule of its baseline."""

from __future__ import annotations


import pyarrow.parquet as pq
import pytest

from tests.recipes import datacomp_inputs as inputs

NAMES = sorted(p.stem for p in inputs.RECIPES.glob("datacomp-*.yaml"))


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    for module in ("open_clip", "faiss", "fasttext"):
        pytest.importorskip(module)
    tmp = tmp_path_factory.mktemp("datacomp")
    with pytest.MonkeyPatch.context() as mp:
        inputs.prepare(tmp, mp)
        yield tmp, mp


@pytest.mark.parametrize("name", NAMES)
def test_recipe_validates_and_runs(name, prepared, cli, manifest_at):
    tmp, _ = prepared
    recipe = inputs.RECIPES / f"{name}.yaml"
    args = inputs.recipe_args(name, tmp)
    checked = cli("validate", recipe, *args)
    assert checked.exit_code == 0, checked.output
    out = tmp / f"out-{name}"
    res = cli("run", recipe, *args, "--output", out, "-w", "1")
    assert res.exit_code == 0, res.output
    manifest = manifest_at(out)
    steps = manifest.steps
    kept = pq.read_table(sorted((out / "data").glob("*.parquet"))).to_pylist()
    assert 0 < len(kept) < 40 == steps[0].rows_in
    assert all(s.rows_in == s.rows_out + s.removed for s in steps)
    assert sorted(p.name for p in (out / "data").glob("*.tar"))  # WebDataset shards out
    for row in kept:
        if name != "datacomp-clip-score":  # every other baseline reads the caption's language
            assert row["language"] == "en"
        if name.startswith("datacomp-image"):
            assert len(row["caption"].split()) > 1 and len(row["caption"]) > 5
        if name == "datacomp-text-based":
            assert {"dog", "cat", "kitten", "bird"} & {w.lower() for w in row["caption"].split()}
    trace = pq.read_table(out / "trace").to_pylist()
    if name.startswith("datacomp-image"):
        assert "image_cluster_not_target" in {t["reason"] for t in trace}
    if name == "datacomp-image-clip":
        scores = sorted([r["quality_clip_score"] for r in kept] +
                        [t["row"]["quality_clip_score"] for t in trace if t["row"].get("quality_clip_score") is not None],
                        reverse=True)
        threshold = scores[int(len(scores) * 0.3)]  # over the whole pool, as the reference
        assert min(r["quality_clip_score"] for r in kept) >= threshold
        assert {t["reason"] for t in trace} <= {"clip_score_low", "caption_rules", "image_cluster_not_target"}


def test_a_missing_reference_set_is_refused_before_the_run(prepared, cli, monkeypatch):
    tmp, _ = prepared
    monkeypatch.setenv("TARGET_EMBEDDINGS", str(tmp / "nowhere.npy"))
    res = cli("validate", inputs.RECIPES / "datacomp-image-clip.yaml", *inputs.recipe_args("datacomp-image-clip", tmp))
    assert res.exit_code == 2
    assert "target_embeddings" in res.output and "nowhere.npy does not exist" in res.output
