"""The adp_join, adp_convert, adp_validate and adp_export operators, alone and in the agent-sft recipe."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import write_jsonl
from tests.operators.agent.adp_fixtures import load, needs_fixtures
from curate import recipe as recipes
from curate.engine.run.runner import RunOptions, run
from curate.errors import RecipeError
from curate_operators.agent import converters
from curate_operators.agent.ops import AdpConvert, AdpExport, AdpValidate
from curate_operators.agent.rows import trajectory_row

RECIPE = Path(__file__).resolve().parents[3] / "recipes" / "agent-sft.yaml"


def _op(cls, **params):
    return cls(cls.Params(**params))


@needs_fixtures
def test_convert_traces_unconvertible_records_with_the_reason():
    raw = load("agenttuning_os", "sample_raw.json")[:2]
    batch = pa.RecordBatch.from_pylist([{"_id": "a", "raw": json.dumps(raw[0])},
                                        {"_id": "b", "raw": json.dumps({"conversations": "oops"})},
                                        {"_id": "c", "raw": "{not json"},
                                        {"_id": "d", "raw": json.dumps(raw[1])}])
    out, verdict = _op(AdpConvert, source="agenttuning_os", raw_column="raw").process(batch)
    assert out.schema.names == ["_parent_id", "id", "content", "details"]
    assert out.column("_parent_id").to_pylist() == ["a", "d"]  # no row for what could not be converted
    assert verdict.keep.tolist() == [True, False, False, True]
    assert verdict.reason == "unconvertible"
    assert "no 'conversations' list" in verdict.detail[1]
    assert "not valid JSON" in verdict.detail[2]
    assert out.column("id").to_pylist()[0] == raw[0]["id"]
    assert json.loads(out.column("content")[0].as_py()) == load("agenttuning_os", "sample_std.json")[0]["content"]


@needs_fixtures
@pytest.mark.parametrize("batch_rows", [1, 8192])
def test_per_step_records_are_joined_across_batches_and_files_as_the_stream_converter_does(tmp_path, batch_rows):
    raw = load("nnetnav-live", "sample_raw.json")  # 30 step records of 5 trajectories
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"raw": json.dumps(r)} for r in raw[:14]])  # cut inside one
    write_jsonl(tmp_path / "in" / "b.jsonl", [{"raw": json.dumps(r)} for r in raw[14:]])
    steps = "  - adp_join: {source: nnetnav-live, raw_column: raw}\n  - adp_convert: {source: nnetnav-live}\n"
    r = recipes.load(text=f"input: {{path: '{tmp_path}/in/*.jsonl', batch_rows: {batch_rows}}}\n"
                          f"output: {{path: '{tmp_path}/out'}}\nsteps:\n{steps}")
    run(r, RunOptions(workers=1))
    got = pq.read_table(tmp_path / "out" / "data").to_pylist()
    expected = [trajectory_row(unit.trajectory) for unit in converters.iter_convert(converters.get("nnetnav-live"), raw)]
    assert [{k: row[k] for k in ("id", "content", "details")} for row in got] == expected
    merged = pq.read_table(tmp_path / "out" / "trace" / "01_adp_join.parquet").to_pylist()
    assert len(merged) == len(raw) - 5 and {m["reason"] for m in merged} == {"merged"}
    assert merged[0]["detail"] == f"joined into the trajectory of row {got[0]['_id'].removesuffix('#0')}"
    assert json.loads(merged[0]["row"]["raw"]) == raw[1]  # the step record, traced as it was read


def test_a_per_step_source_needs_adp_join_before_adp_convert(tmp_path):
    write_jsonl(tmp_path / "in.jsonl", [{"raw": "{}"}])
    r = recipes.load(text=f"input: {{path: '{tmp_path}/in.jsonl'}}\noutput: {{path: '{tmp_path}/out'}}\n"
                          "steps:\n  - adp_convert: {source: nnetnav-wa, raw_column: raw}\n")
    with pytest.raises(RecipeError, match=r"steps\[0\]\.adp_convert\.source: nnetnav-wa has one record per step: "
                                          r"put `- adp_join: \{source: nnetnav-wa, raw_column: raw\}` before"):
        run(r, RunOptions(workers=1))


def test_validate_keeps_valid_rows_and_traces_the_located_error():
    good = {"id": "x", "content": json.dumps([{"class_": "message_action", "content": "hi"}]), "details": "{}"}
    bad = {"id": "y", "content": json.dumps([{"class_": "message_action", "content": 3}]), "details": "{}"}
    broken = {"id": "z", "content": "[{", "details": "{}"}
    verdict = _op(AdpValidate).keep(pa.RecordBatch.from_pylist([good, bad, broken]))
    assert verdict.keep.tolist() == [True, False, False]
    assert verdict.reason == "invalid_adp"
    assert verdict.detail[1].startswith("trajectory 'y', event 0 (message_action), field 'content'")
    assert "not valid JSON" in verdict.detail[2]


@needs_fixtures
def test_export_agentlab_emits_one_row_per_action_and_traces_skipped():
    web = load("synatra", "sample_std.json")[0]
    code_only = load("agenttuning_os", "sample_std.json")[0]
    rows = [{"_id": "w", "id": web["id"], "content": orjson.dumps(web["content"]).decode(), "details": "{}"},
            {"_id": "o", "id": code_only["id"], "content": orjson.dumps(code_only["content"]).decode(),
             "details": "{}"}]
    out, verdict = _op(AdpExport, style="agentlab", environment="synatra").process(pa.RecordBatch.from_pylist(rows))
    assert out.schema.names == ["_parent_id", "id", "system", "conversations"]
    assert set(out.column("_parent_id").to_pylist()) == {"w"}
    assert verdict.keep.tolist() == [True, False]
    assert "no API actions" in verdict.detail[1]
    turn = out.column("conversations")[0].as_py()[0]
    assert set(turn) == {"role", "content"}


def test_unknown_names_are_recipe_errors_listing_the_known_ones():
    text = "input: {path: x.jsonl}\noutput: {path: out}\nsteps:\n  - adp_convert: {source: agentinstruct}\n"
    with pytest.raises(RecipeError, match=r"steps\[0\]\.adp_convert\.source: .*known sources: .*swe-smith"):
        recipes.load(text=text)
    text = "input: {path: x.jsonl}\noutput: {path: out}\nsteps:\n  - adp_export: {style: axolotl}\n"
    with pytest.raises(RecipeError, match="known styles: agentlab, openhands, sweagent"):
        recipes.load(text=text)


@needs_fixtures
def test_agent_sft_recipe_end_to_end(tmp_path, cli, monkeypatch):
    raw = load("agenttuning_webshop", "sample_raw.json")
    data = tmp_path / "webshop.jsonl"
    # a duplicate trajectory and a record no converter can read
    data.write_text("".join(json.dumps(r) + "\n" for r in raw + raw[:1] + [{"id": "junk", "conversations": []}]))
    monkeypatch.setenv("ADP_SOURCE", "agenttuning_webshop")
    monkeypatch.setenv("ADP_STYLE", "sweagent")
    result = cli("run", RECIPE, "--input", data, "--output", tmp_path / "out")
    assert result.exit_code == 0, result.output
    table = pq.read_table(next((tmp_path / "out" / "data").glob("*.parquet")))
    assert sorted(table.column("id").to_pylist()) == sorted(r["id"] for r in raw)
    first = table.column("conversations")[0].as_py()
    assert first[0]["from"] == "human" and "In bash" in first[0]["value"] or first[0]["value"]
    traces = {p.stem: pq.read_table(p) for p in (tmp_path / "out" / "trace").glob("*.parquet")}
    assert traces["02_adp_convert"].column("reason").to_pylist() == ["unconvertible"]
    assert traces["04_exact_dedup"].num_rows == 1
