"""`curate adp convert | export | validate`: one-step recipes run by the runner of `curate run`
(run directory with data/, trace/ and manifest.json), rejected records traced with their reasons."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from tests.operators.agent.adp_fixtures import FIXTURES, load, needs_fixtures
from curate_operators.agent.cli import app

pytestmark = needs_fixtures


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args] + (["-w", "1"] if args[0] != "sources" else []),
                              catch_exceptions=False)


def data_rows(run_dir: Path) -> list[dict]:
    rows = []
    for part in sorted((run_dir / "data").iterdir()):
        if part.suffix == ".parquet":
            rows += pq.read_table(part).to_pylist()
        else:
            rows += [json.loads(line) for line in part.read_text().splitlines()]
    return rows


def trace_rows(run_dir: Path) -> list[dict]:
    return [r for part in sorted((run_dir / "trace").glob("*.parquet")) for r in pq.read_table(part).to_pylist()]


def data_bytes(run_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((run_dir / "data").iterdir())}


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_convert_then_validate_then_export(tmp_path, fmt, manifest_at):
    adp = tmp_path / "alf"
    result = run("convert", "--from", "agenttuning_alfworld", FIXTURES / "agenttuning_alfworld" / "sample_raw.json",
                 "-o", adp, "--format", fmt)
    assert result.exit_code == 0 and "wrote 5 trajectories" in result.output, result.output
    assert manifest_at(adp).rows_out == 5
    assert run("validate", adp / "data").exit_code == 0
    sft = tmp_path / "sft"
    result = run("export", "--to", "openhands", "--env", "agenttuning_alfworld", adp / "data", "-o", sft,
                 "--format", fmt)
    assert result.exit_code == 0 and "wrote 5 samples" in result.output, result.output
    rows = data_rows(sft)
    assert [r["id"] for r in rows] == [t["id"] for t in load("agenttuning_alfworld", "sample_std.json")]
    assert rows[0]["conversations"][1] == {"from": "gpt", "value": "OK. I'll follow your instructions and try my "
                                                                   "best to solve the task."}


def test_rejected_records_go_to_the_trace_with_the_reason(tmp_path):
    raw = load("agenttuning_os", "sample_raw.json")
    src = tmp_path / "os.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in [raw[0], {"id": "bad", "conversations": 7}, raw[1]]))
    out = tmp_path / "os_adp"
    result = run("convert", "--from", "agenttuning_os", src, "-o", out)
    assert "wrote 2 trajectories" in result.output and "rejected 1 (unconvertible: 1)" in result.output
    (rejected,) = trace_rows(out)
    assert rejected["reason"] == "unconvertible" and "conversations" in rejected["detail"]
    assert json.loads(rejected["row"]["raw"])["id"] == "bad"  # the record as the file has it
    assert not list(tmp_path.glob("*.rejected.jsonl"))


def test_export_skips_what_the_style_cannot_render(tmp_path):
    out = tmp_path / "al"
    result = run("export", "--to", "agentlab", FIXTURES / "agenttuning_os" / "sample_std.json", "-o", out)
    assert result.exit_code == 0 and "rejected 5 (not_exportable: 5)" in result.output
    assert data_rows(out) == [] and {r["reason"] for r in trace_rows(out)} == {"not_exportable"}


def test_validate_reports_located_errors_and_exits_2(cli, tmp_path):
    std = load("agenttuning_os", "sample_std.json")
    std[1]["content"][2]["source"] = "robot"
    src = tmp_path / "std.json"
    src.write_text(json.dumps(std))
    result = cli("adp", "validate", src, "-o", tmp_path / "checked", "-w", "1")
    assert result.exit_code == 2  # the README: 2 is a problem with the data
    assert ": trajectory 'os_116', event 2 (text_observation), field 'source'" in result.stdout
    assert "4 valid, 1 invalid of 5" in result.stdout
    assert f"error: {src}: 1 of 5 trajectories are not valid ADP" in " ".join(result.stderr.split())
    (bad,) = trace_rows(tmp_path / "checked")
    assert bad["reason"] == "invalid_adp" and json.loads(bad["row"]["content"])[2]["source"] == "robot"
    assert cli("adp", "validate", FIXTURES / "agenttuning_os" / "sample_std.json").exit_code == 0


def test_convert_that_writes_no_trajectory_exits_2_with_the_reasons_counted(cli, tmp_path):
    # nnetnav step records given to the synatra converter, and a line that is not JSON
    raw = load("nnetnav-live", "sample_raw.json")
    src = tmp_path / "steps.jsonl"
    src.write_text(json.dumps(raw[0]) + "\n{oops\n" + json.dumps(raw[1]) + "\n")
    result = cli("adp", "convert", "--from", "synatra", src, "-o", tmp_path / "adp", "-w", "1")
    assert result.exit_code == 2
    assert "adp_convert removed the last 2 rows (unconvertible (2))" in " ".join(result.stderr.split())
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = cli("adp", "convert", "--from", "synatra", empty, "-o", tmp_path / "adp2")
    assert result.exit_code == 2 and "the file is empty" in result.stderr


def test_unknown_source_and_style_list_the_known_ones(tmp_path):
    result = run("convert", "--from", "agentinstruct", tmp_path / "x.json", "-o", tmp_path / "y")
    assert result.exit_code == 2 and "known sources:" in result.output and "swe-smith" in result.output
    result = run("export", "--to", "axolotl", FIXTURES / "agenttuning_os" / "sample_std.json", "-o", tmp_path / "y")
    assert result.exit_code == 2 and "known styles: agentlab, openhands, sweagent" in result.output


def test_an_output_file_name_is_refused_naming_the_run_directory(tmp_path):
    result = run("convert", "--from", "agenttuning_os", FIXTURES / "agenttuning_os" / "sample_raw.json",
                 "-o", tmp_path / "adp.jsonl")
    assert result.exit_code == 2 and "-o names the run directory" in result.output
    assert not (tmp_path / "adp.jsonl").exists()


def test_a_malformed_input_line_is_traced_by_file_and_line(tmp_path):
    raw = load("agenttuning_os", "sample_raw.json")
    src = tmp_path / "bad.jsonl"
    src.write_text(json.dumps(raw[0]) + "\n{oops\n" + json.dumps(raw[1]) + "\n")
    result = run("convert", "--from", "agenttuning_os", src, "-o", tmp_path / "o")
    assert result.exit_code == 0 and "wrote 2 trajectories" in result.output
    (rejected,) = trace_rows(tmp_path / "o")
    assert rejected["reason"] == "unparseable" and "bad.jsonl, line 2: malformed JSON" in rejected["detail"]


def test_raw_parquet_input_is_read_as_records(tmp_path):
    import pyarrow as pa

    raw = load("agenttuning_kg", "sample_raw.json")
    src = tmp_path / "kg.parquet"
    pq.write_table(pa.Table.from_pylist(raw), src)
    assert "wrote 5 trajectories" in run("convert", "--from", "agenttuning_kg", src, "-o", tmp_path / "kg").output
    ours = [r["content"] for r in data_rows(tmp_path / "kg")]  # JSON lines: content nested
    assert [t[:-2] for t in ours] == [t["content"][:-2] for t in load("agenttuning_kg", "sample_std.json")]


@pytest.mark.parametrize("dataset", ["nnetnav-live", "agenttuning_os", "webarena_successful", "screenagent"])
def test_convert_equals_curate_run_of_its_recipe_whatever_the_batch_rows(cli, tmp_path, dataset):
    """The command is its recipe: `curate run` on what --show-recipe prints writes the same bytes,
    and those bytes do not depend on batch_rows (nnetnav joins steps across batches)."""
    src = FIXTURES / dataset / "sample_raw.json"
    seen = set()
    for batch_rows in (1, 2, 7, 8192):
        ours = tmp_path / f"cmd{batch_rows}"
        assert run("convert", "--from", dataset, src, "-o", ours, "--batch-rows", batch_rows).exit_code == 0
        shown = run("convert", "--from", dataset, src, "-o", tmp_path / f"run{batch_rows}", "--batch-rows",
                    batch_rows, "--show-recipe")
        recipe = tmp_path / f"r{batch_rows}.yaml"
        recipe.write_text(shown.output)
        assert yaml.safe_load(shown.output)["input"]["batch_rows"] == batch_rows
        assert cli("run", recipe, "-w", "1", "--no-report").exit_code == 0
        assert data_bytes(ours) == data_bytes(tmp_path / f"run{batch_rows}")
        seen.add(tuple(data_bytes(ours).items()))
    assert len(seen) == 1


def test_sources_lists_every_converter_with_what_it_needs():
    from curate_operators.agent import converters

    out = run("sources").output
    listed = {line.strip().split(":")[0] for line in out.splitlines() if line.startswith("  ")}
    assert listed == set(converters.names())
    assert "  androidcontrol: screenshots on disk" in out and "  llava_plus: images on disk" in out
    assert "  nnetnav-live: one record per step" in out and "adp_join before adp_convert" in out
    assert "  screenagent: each record a JSON array" in out and "  synatra: the records alone" in out
    assert "  turkingbench: the lxml package (pip install 'curate[adp]')" in out


@pytest.mark.parametrize("dataset", ["synatra", "nnetnav-live"])
def test_records_without_an_id_get_the_converters_and_the_references_ids(tmp_path, dataset):
    """Synatra's records carry no id: the command names them by their position in the file, as
    the converter (iter_convert) and the ADP reference do (`0`, `1`, ...), not by curate's row id."""
    from curate_operators.agent import converters

    src = FIXTURES / dataset / "sample_raw.json"
    assert run("convert", "--from", dataset, src, "-o", tmp_path / "out").exit_code == 0
    ours = [r["id"] for r in data_rows(tmp_path / "out")]
    direct = [t["id"] for u in converters.iter_convert(converters.get(dataset), load(dataset, "sample_raw.json"))
              for t in u.trajectories]
    assert ours == direct == [t["id"] for t in load(dataset, "sample_std.json")]


def test_jsonl_output_holds_content_and_details_as_nested_json(tmp_path):
    """`--format jsonl` writes trajectories as the ADP releases' std files do (content a list of
    events, details an object); Parquet keeps them as JSON text; validate and export read both."""
    src = FIXTURES / "agenttuning_alfworld" / "sample_raw.json"
    for fmt in ("jsonl", "parquet"):
        assert run("convert", "--from", "agenttuning_alfworld", src, "-o", tmp_path / fmt, "--format", fmt).exit_code == 0
    lines = [json.loads(line) for part in sorted((tmp_path / "jsonl" / "data").glob("*.jsonl"))
             for line in part.read_text().splitlines()]
    assert [type(r["content"]) for r in lines] == [list] * 5 and all(isinstance(r["details"], dict) for r in lines)
    assert {e["class_"] for r in lines for e in r["content"]} >= {"text_observation", "message_action"}
    texts = data_rows(tmp_path / "parquet")
    assert [json.loads(r["content"]) for r in texts] == [r["content"] for r in lines]
    for fmt in ("jsonl", "parquet"):
        assert run("validate", tmp_path / fmt / "data").exit_code == 0
        res = run("export", "--to", "openhands", "--env", "agenttuning_alfworld", tmp_path / fmt / "data",
                  "-o", tmp_path / f"sft-{fmt}")
        assert res.exit_code == 0 and "wrote 5 samples" in res.output, res.output
    # the same samples (the row ids differ: the jsonl data keeps its own, the Parquet data its own)
    assert ([{k: v for k, v in r.items() if k != "_id"} for r in data_rows(tmp_path / "sft-jsonl")]
            == [{k: v for k, v in r.items() if k != "_id"} for r in data_rows(tmp_path / "sft-parquet")])
