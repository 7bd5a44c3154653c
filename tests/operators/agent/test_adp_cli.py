"""`curate adp convert | export | validate`: files in, files out, rejected records with reasons."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from tests.operators.agent.adp_fixtures import FIXTURES, load, needs_fixtures
from operators.agent.cli import app

pytestmark = needs_fixtures


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_convert_then_validate_then_export(tmp_path, suffix):
    adp = tmp_path / f"alf{suffix}"
    result = run("convert", "--from", "agenttuning_alfworld", FIXTURES / "agenttuning_alfworld" / "sample_raw.json",
                 "-o", adp)
    assert result.exit_code == 0 and "wrote 5 trajectories" in result.output
    assert run("validate", adp).exit_code == 0
    sft = tmp_path / f"sft{suffix}"
    result = run("export", "--to", "openhands", "--env", "agenttuning_alfworld", adp, "-o", sft)
    assert result.exit_code == 0 and "wrote 5 samples" in result.output
    if suffix == ".parquet":
        rows = pq.read_table(sft).to_pylist()
    else:
        rows = [json.loads(line) for line in sft.read_text().splitlines()]
    assert [r["id"] for r in rows] == [t["id"] for t in load("agenttuning_alfworld", "sample_std.json")]
    assert rows[0]["conversations"][1] == {"from": "gpt", "value": "OK. I'll follow your instructions and try my "
                                                                   "best to solve the task."}


def test_rejected_records_go_to_a_side_file(tmp_path):
    raw = load("agenttuning_os", "sample_raw.json")
    src = tmp_path / "os.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in [raw[0], {"id": "bad", "conversations": 7}, raw[1]]))
    out = tmp_path / "os_adp.jsonl"
    result = run("convert", "--from", "agenttuning_os", src, "-o", out)
    assert "wrote 2 trajectories" in result.output and "rejected 1 (unconvertible: 1)" in result.output
    (rejected,) = [json.loads(x) for x in (tmp_path / "os_adp.jsonl.rejected.jsonl").read_text().splitlines()]
    assert rejected["row"] == 1 and rejected["reason"] == "unconvertible"


def test_export_skips_what_the_style_cannot_render(tmp_path):
    out = tmp_path / "al.jsonl"
    result = run("export", "--to", "agentlab", FIXTURES / "agenttuning_os" / "sample_std.json", "-o", out)
    assert result.exit_code == 0 and "rejected 5 (not_exportable: 5)" in result.output
    assert out.read_text() == ""


def test_validate_reports_located_errors_and_exits_2(cli, tmp_path):
    std = load("agenttuning_os", "sample_std.json")
    std[1]["content"][2]["source"] = "robot"
    src = tmp_path / "std.json"
    src.write_text(json.dumps(std))
    result = cli("adp", "validate", src, "--rejected", tmp_path / "bad.jsonl")
    assert result.exit_code == 2  # the README: 2 is a problem with the data
    assert "record 1: trajectory 'os_116', event 2 (text_observation), field 'source'" in result.stdout
    assert "4 valid, 1 invalid of 5" in result.stdout
    assert f"error: {src}: 1 of 5 trajectories are not valid ADP" in result.stderr
    assert json.loads((tmp_path / "bad.jsonl").read_text())["id"] == "os_116"
    assert cli("adp", "validate", FIXTURES / "agenttuning_os" / "sample_std.json").exit_code == 0


def test_convert_that_writes_no_trajectory_exits_2_with_the_reasons_counted(cli, tmp_path):
    # nnetnav step records given to the synatra converter, and a line that is not JSON
    raw = load("nnetnav-live", "sample_raw.json")
    src = tmp_path / "steps.jsonl"
    src.write_text(json.dumps(raw[0]) + "\n{oops\n" + json.dumps(raw[1]) + "\n")
    out = tmp_path / "adp.jsonl"
    result = cli("adp", "convert", "--from", "synatra", src, "-o", out)
    assert result.exit_code == 2
    assert "rejected 3 (unconvertible: 2, unparseable: 1)" in result.stdout
    assert (f"error: {src}: no record converted with --from synatra (0 of 3); unconvertible: 2, unparseable: 1; "
            "first, record 0: record needs string 'prompt' and 'response'") in " ".join(result.stderr.split())
    assert len((tmp_path / "adp.jsonl.rejected.jsonl").read_text().splitlines()) == 3
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = cli("adp", "convert", "--from", "synatra", empty, "-o", out)
    assert result.exit_code == 2 and f"error: {empty}: no records to convert" in result.stderr


def test_unknown_source_and_style_list_the_known_ones(tmp_path):
    result = run("convert", "--from", "agentinstruct", tmp_path / "x.json", "-o", tmp_path / "y.jsonl")
    assert result.exit_code == 2 and "known sources:" in result.output and "swe-smith" in result.output
    result = run("export", "--to", "axolotl", FIXTURES / "agenttuning_os" / "sample_std.json", "-o", tmp_path / "y.jsonl")
    assert result.exit_code == 2 and "known styles: agentlab, openhands, sweagent" in result.output


def test_a_malformed_input_line_is_rejected_by_file_and_line(tmp_path):
    raw = load("agenttuning_os", "sample_raw.json")
    src = tmp_path / "bad.jsonl"
    src.write_text(json.dumps(raw[0]) + "\n{oops\n" + json.dumps(raw[1]) + "\n")
    result = run("convert", "--from", "agenttuning_os", src, "-o", tmp_path / "o.jsonl")
    assert result.exit_code == 0 and "wrote 2 trajectories" in result.output
    (rejected,) = [json.loads(x) for x in (tmp_path / "o.jsonl.rejected.jsonl").read_text().splitlines()]
    assert rejected["reason"] == "unparseable" and "bad.jsonl, line 2: not valid JSON" in rejected["detail"]


def test_raw_parquet_input_streams_like_jsonl(tmp_path):
    import pyarrow as pa

    raw = load("agenttuning_kg", "sample_raw.json")
    src = tmp_path / "kg.parquet"
    pq.write_table(pa.Table.from_pylist(raw), src)
    out = tmp_path / "kg.jsonl"
    assert "wrote 5 trajectories" in run("convert", "--from", "agenttuning_kg", src, "-o", out).output
    ours = [json.loads(x) for x in out.read_text().splitlines()]
    assert [t["content"][:-2] for t in ours] == [t["content"][:-2] for t in load("agenttuning_kg", "sample_std.json")]
