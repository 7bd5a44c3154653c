"""recipes/wrap.yaml as shipped, against the loopback mock: ~300-token chunks, one rephrasing
per chunk beside it (medium or qa), conservation, and the key named in the recipe used."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from tests.conftest import write_jsonl

RECIPE = Path(__file__).resolve().parents[2] / "recipes" / "wrap.yaml"
SENTENCE = "The committee met on Tuesday to discuss the new budget for the coming year. "


def test_wrap_recipe_runs_as_shipped(cli, tmp_path, monkeypatch, manifest_at):
    from tests.curate.llm.mockkit import RunningMock

    server = RunningMock(api_key="k-123")
    try:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("WRAP_MODEL", "mock")
        monkeypatch.setenv("OPENAI_API_KEY", "k-123")
        monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "cache"))
        docs = write_jsonl(tmp_path / "docs.jsonl", [{"text": SENTENCE * n} for n in (3, 40, 90)])
        result = cli("run", RECIPE, "--input", docs, "--output", tmp_path / "out", "--workers", "2")
        assert result.exit_code == 0, result.output
    finally:
        server.stop()
    manifest = manifest_at(tmp_path / "out")
    read, chunk, rephrase = manifest.steps
    assert chunk.rows_out == 1 + 2 + 5  # 14 words a sentence: 21 sentences (294 words) a chunk
    assert rephrase.rows_in == rephrase.expanded == 8 and rephrase.rows_out == 16
    rows = pq.read_table(tmp_path / "out" / "data").to_pylist()
    assert sorted(r["synth_style"] or "real" for r in rows).count("real") == 8
    assert {r["synth_style"] for r in rows} == {None, "medium", "qa"}
    assert all(len(r["text"].split()) <= 300 for r in rows if r["synth_style"] is None)
    assert manifest.recipe["steps"][1]["rephrase"]["llm"]["base_url"] == "${OPENAI_BASE_URL}"
