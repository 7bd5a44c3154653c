"""The dataset card of a run (curate/card.py, `curate card`): the Hub's YAML front matter validated
by huggingface_hub's DatasetCard, the funnel read back against the manifest, tokens and QDC
metrics where the run has them, the recipe as run with its ${VAR}s never expanded, and
datasets.load_dataset(RUN_DIR) reading data/ alone once the card is written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from curate.card import card_text, check, read_funnel, size_category, write_card
from curate.cli import app
from curate.errors import CurateError

ROOT = Path(__file__).resolve().parents[2]
SECRET = "zebra-secret-4711"

WORDS = "the quick brown fox jumps over a lazy dog while people read books about history and science".split()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    from tests.operators.text.tiny_tokenizer import word_tokenizer

    root = tmp_path_factory.mktemp("card")
    (root / "in").mkdir()
    with open(root / "in" / "docs.jsonl", "w") as out:
        for i in range(60):
            text = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(12 + i % 5)) if i % 7 else SECRET
            out.write(json.dumps({"id": i, "text": text if i % 10 else "the same text repeated here for dedup"}) + "\n")
    tokenizer = word_tokenizer(root / "tokenizer.json", 50)
    (root / "recipe.yaml").write_text(f"""name: card-test
input: {{path: {root / 'in'}/*.jsonl, text_column: text, id_column: id}}
output: {{path: {root / 'out'}}}
metrics: {{sample: 20, bleu_sample: 10}}
steps:
  - normalize_text: {{}}
  - sql_filter: {{where: "text <> '${{SECRET_WORD}}'"}}
  - token_count: {{tokenizer: {tokenizer}}}
  - exact_dedup: {{}}
""")
    p = subprocess.run([sys.executable, "-m", "curate.cli", "run", str(root / "recipe.yaml"), "-w", "1", "--no-report"],
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=str(ROOT), SECRET_WORD=SECRET))
    assert p.returncode == 0, p.stderr
    return root / "out"


def _manifest(run_dir: Path):
    from curate.manifest import read

    return read((run_dir / "manifest.json").read_bytes(), str(run_dir / "manifest.json"))


def test_the_front_matter_validates_with_huggingface_hub(run_dir):
    from huggingface_hub import DatasetCard, DatasetCardData

    text = card_text(run_dir, license="odc-by", language=["en"])
    card = DatasetCard(text)
    assert isinstance(card.data, DatasetCardData)
    data = card.data.to_dict()
    assert data["license"] == "odc-by" and data["language"] == ["en"]
    assert data["size_categories"] == ["n<1K"] and data["task_categories"] == ["text-generation"]
    assert data["pretty_name"] == "card-test" and "curate" in data["tags"]
    assert data["configs"] == [{"config_name": "default", "default": True,
                                "data_files": [{"split": "train", "path": ["data/*.parquet"]}]},
                               {"config_name": "trace",  # a run directory's own card: its trace too
                                "data_files": [{"split": "train", "path": ["trace/*.parquet"]}]}]
    # what it would be as DatasetCardData builds it: the same YAML mapping round-trips
    rebuilt = DatasetCardData(**data)
    assert rebuilt.to_dict() == data
    check(text, [e.path for e in _manifest(run_dir).outputs]
          + [f"trace/{p.name}" for p in (run_dir / "trace").glob("*.parquet")])


def test_the_funnel_reads_back_as_the_manifest_has_it(run_dir):
    manifest = _manifest(run_dir)
    funnel = read_funnel(card_text(run_dir))
    assert funnel == [{"step": s.step, "op": s.op, "kind": s.kind, "rows_in": s.rows_in,
                       "rows_out": s.rows_out, "removed": s.removed, "reasons": s.reasons}
                      for s in manifest.steps]
    assert any(step["reasons"] for step in funnel)  # a funnel with reasons, not an empty one
    for step in funnel:
        assert step["rows_in"] == step["rows_out"] + step["removed"]


def test_tokens_metrics_recipe_lineage_and_reproduce(run_dir):
    manifest = _manifest(run_dir)
    text = card_text(run_dir)
    [counted] = [s for s in manifest.steps if (s.counts or {}).get("tokens")]
    assert f"| {counted.step} | {counted.counts['tokens']:,} |" in text
    assert "## Quality, diversity and complexity metrics" in text
    metrics = manifest.entry("dataset_metrics")
    assert f"| distinct_1 | {metrics['input']['distinct_1']} | {metrics['output']['distinct_1']} |" in text
    # the recipe as run: its ${VAR} stays a reference; the value it had is nowhere in the card
    assert "${SECRET_WORD}" in text and SECRET not in text
    assert "export SECRET_WORD=..." in text
    assert f"pip install 'curate=={manifest.versions['curate']}'" in text
    for entry in manifest.inputs:
        assert entry.path in text
    assert manifest.recipe_fingerprint in text and manifest.run.started_at in text


def test_curate_card_writes_it_and_load_dataset_reads_data_alone(run_dir, tmp_path):
    target = tmp_path / "CARD.md"
    result = CliRunner().invoke(app, ["card", str(run_dir), "-o", str(target), "--license", "cc-by-4.0",
                                      "--language", "en", "--language", "de", "--task-category", "fill-mask"])
    assert result.exit_code == 0, result.output
    from huggingface_hub import DatasetCard

    data = DatasetCard(target.read_text()).data
    assert (data.license, data.language, data.task_categories) == ("cc-by-4.0", ["en", "de"], ["fill-mask"])

    written = write_card(run_dir)
    assert written == run_dir / "README.md"
    from datasets import load_dataset

    ds = load_dataset(str(run_dir), split="train", cache_dir=str(tmp_path / "hf"))
    manifest = _manifest(run_dir)
    assert len(ds) == manifest.rows_out  # data/ alone: the trace's removed rows are not read
    assert "reason" not in ds.column_names


def test_curate_card_of_no_run_is_an_error_not_a_traceback(tmp_path):
    result = CliRunner().invoke(app, ["card", str(tmp_path)])
    assert result.exit_code == 2
    assert "no finished run" in result.output and "Traceback" not in result.output


def test_size_categories_and_the_offline_check():
    assert [size_category(n) for n in (0, 999, 1000, 54_321, 2_000_000, 10**13)] == \
        ["n<1K", "n<1K", "1K<n<10K", "10K<n<100K", "1M<n<10M", "n>1T"]
    good = "---\nsize_categories:\n- n<1K\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n" \
           "    path: data/train-*.parquet\n---\n\nbody\n"
    check(good, ["data/train-00000-of-00001.parquet"])
    with pytest.raises(CurateError, match="match no published file"):
        check(good, ["data/part-00000.parquet"])
    with pytest.raises(CurateError, match="not the Hub's"):
        check(good.replace("n<1K", "tiny"), ["data/train-00000-of-00001.parquet"])
    with pytest.raises(CurateError, match="not a YAML mapping"):
        check("---\n- a list\n---\n", [])


def test_credentials_written_in_a_recipe_are_withheld(tmp_path):
    manifest = {"name": "x", "recipe": {"name": "x", "input": {"path": "s3://b/*.jsonl", "storage_options": {
        "key": "AKIALITERAL", "secret": "${AWS_SECRET}", "endpoint_url": "http://minio:9000"}},
        "output": {"path": "out"}, "steps": [{"language_id": {"languages": ["en", "de"]}},
                                             {"rephrase": {"api_key": "sk-literal", "model": "m"}}]},
        "steps": [{"step": "00_read", "op": "read", "kind": "read", "rows_in": 0, "rows_out": 0, "removed": 0,
                   "seconds": 0.0, "reasons": {}}], "rows_in": 0, "rows_out": 0, "outputs": [],
        "versions": {"curate": "0"},
        # the rest of what a manifest holds (its model, curate/manifest.py, reads it)
        "format_version": "curate-run/1", "recipe_fingerprint": "f", "seed": 0, "run": {"host": "h", "started_at": "t"},
        "inputs": [], "format": "parquet", "data_files": 0, "seconds": 0.0}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    text = card_text(tmp_path)
    assert "AKIALITERAL" not in text and "sk-literal" not in text
    assert "${AWS_SECRET}" in text and "http://minio:9000" in text and "export AWS_SECRET=..." in text
    from huggingface_hub import DatasetCard

    data = DatasetCard(text).data
    assert data.language == ["en", "de"]  # those the language_id step keeps, where the recipe names none
    assert "configs" not in data.to_dict()  # no data file: no config to point at none
