"""recipes/agent-sft.yaml out of the box: `curate adp demo` writes its input where the recipe looks,
and `curate run recipes/agent-sft.yaml` converts, validates, dedups and exports it."""

import json
from pathlib import Path

import pyarrow.parquet as pq

RECIPE = Path(__file__).resolve().parents[2] / "recipes" / "agent-sft.yaml"


def test_agent_sft_runs_on_the_agent_demo_with_no_other_input(cli, tmp_path, monkeypatch, manifest_at):
    monkeypatch.chdir(tmp_path)  # the recipe's input path is relative, as a user runs it from the checkout
    for var in ("ADP_SOURCE", "ADP_STYLE", "ADP_RAW_COLUMN"):
        monkeypatch.delenv(var, raising=False)
    made = cli("adp", "demo")
    assert made.exit_code == 0, made.output
    assert list((tmp_path / "data" / "agent").glob("*.jsonl"))
    res = cli("run", RECIPE, "--output", tmp_path / "out")
    assert res.exit_code == 0, res.output
    manifest = manifest_at(tmp_path / "out")
    removed = {s.op: s.removed for s in manifest.steps}
    assert manifest.rows_out > 0
    assert removed["adp_convert"] > 0 and removed["exact_dedup"] > 0  # the demo's planted defects are found
    assert removed["adp_validate"] == 0 and removed["adp_export"] == 0
    table = pq.read_table(tmp_path / "out" / "data")
    assert table.num_rows == manifest.rows_out
    turns = table.column("conversations")[0].as_py()
    assert turns[0]["from"] == "human" and turns[1]["from"] == "gpt"
    assert "<function=execute_bash>" in turns[1]["value"]


def test_records_whose_shape_varies_convert_read_whole_and_parquet_rows_as_they_are(cli, tmp_path, monkeypatch, manifest_at):
    """webarena_successful steps are observations or actions (an `action` key in some only): read a
    column per field, Arrow gave every step an `action` and none converted; read whole, all do."""
    import pyarrow as pa

    from tests.operators.agent import adp_fixtures

    adp_fixtures.require()  # skips without the fixtures (fails in CI)
    raw = adp_fixtures.load("webarena_successful", "sample_raw.json")
    src = tmp_path / "wa.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in raw))
    monkeypatch.delenv("ADP_RAW_COLUMN", raising=False)
    monkeypatch.setenv("ADP_SOURCE", "webarena_successful")
    res = cli("run", RECIPE, "--input", src, "--output", tmp_path / "wa", "-w", "1", "--no-report")
    assert res.exit_code == 0, res.output
    assert manifest_at(tmp_path / "wa").rows_out == len(raw)
    kg = tmp_path / "kg.parquet"
    pq.write_table(pa.Table.from_pylist(adp_fixtures.load("agenttuning_kg", "sample_raw.json")), kg)
    monkeypatch.setenv("ADP_SOURCE", "agenttuning_kg")
    res = cli("run", RECIPE, "--input", kg, "--output", tmp_path / "kg", "-w", "1", "--no-report")
    assert res.exit_code == 2 and "leave input.raw_column empty" in res.stderr
    monkeypatch.setenv("ADP_RAW_COLUMN", "")
    res = cli("run", RECIPE, "--input", kg, "--output", tmp_path / "kg", "-w", "1", "--no-report")
    assert res.exit_code == 0, res.output
