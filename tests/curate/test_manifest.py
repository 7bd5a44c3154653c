"""The manifest is written and read through its model (curate/manifest.py)."""

import json

import pytest

from curate.errors import CurateError
from curate.manifest import FORMAT_VERSION, Manifest, read
from tests.conftest import write_jsonl


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    """A finished run: its directory, and what run() returned."""
    from curate.engine.run.runner import RunOptions, run
    from curate.recipe import load

    tmp = tmp_path_factory.mktemp("run")
    write_jsonl(tmp / "in" / "a.jsonl", [{"text": f"row {i} " * (i % 3 + 1)} for i in range(20)])
    recipe = load(text=f"input: {{path: '{tmp / 'in'}'}}\noutput: {{path: '{tmp / 'out'}'}}\n"
                       f"steps:\n  - sql_filter: {{where: 'length(text) > 8'}}\n")
    return tmp / "out", run(recipe, RunOptions(workers=1))


@pytest.fixture(scope="module")
def finished(ran):
    return ran[0]


def test_run_returns_the_manifest_it_wrote_saying_where_the_run_went(ran):
    out, returned = ran
    written = read((out / "manifest.json").read_bytes(), "manifest.json")
    assert isinstance(returned, Manifest) and returned == written and returned.to_bytes() == written.to_bytes()
    assert returned.run_dir == str(out) and returned.hub is None and not returned.already_finished
    assert written.run_dir is None and "run_dir" not in returned.to_dict()  # where it went is not written
    assert returned != written.model_copy(update={"rows_out": written.rows_out + 1})  # equal means the same content


def test_a_run_writes_a_manifest_its_model_reads_back(finished):
    data = (finished / "manifest.json").read_bytes()
    manifest = read(data, "manifest.json")
    assert manifest.format_version == FORMAT_VERSION
    assert [s.step for s in manifest.steps] == ["00_read", "01_sql_filter"]
    assert manifest.rows_in == 20 and manifest.rows_out == manifest.rows_in - manifest.steps[1].removed
    assert manifest.outputs[0].path.startswith("data/")
    assert json.loads(manifest.to_bytes()) == json.loads(data)  # nothing dropped or added on the way


def test_a_manifest_from_before_format_version_is_read_and_a_newer_format_refused(finished):
    content = json.loads((finished / "manifest.json").read_bytes())
    old = {k: v for k, v in content.items() if k != "format_version"}
    assert read(json.dumps(old), "old/manifest.json").format_version == FORMAT_VERSION
    with pytest.raises(CurateError, match="format 'curate-run/2', which this curate"):
        read(json.dumps({**content, "format_version": "curate-run/2"}), "new/manifest.json")
    with pytest.raises(CurateError, match=r"damaged manifest: steps\.0\.rows_in"):
        broken = {**content, "steps": [{**content["steps"][0], "rows_in": "many"}]}
        read(json.dumps(broken), "x/manifest.json")
    with pytest.raises(CurateError, match="not a curate manifest"):
        read(b"[1, 2]", "y/manifest.json")


def test_curate_report_refuses_a_newer_manifest_with_a_message(finished, cli, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(finished, copy)
    content = json.loads((copy / "manifest.json").read_bytes())
    (copy / "manifest.json").write_text(json.dumps({**content, "format_version": "curate-run/9"}))
    res = cli("report", copy)
    assert res.exit_code == 2 and "curate-run/9" in res.stderr and "Traceback" not in res.output


def test_the_json_schema_names_every_field():
    schema = Manifest.model_json_schema()
    assert {"format_version", "steps", "outputs", "recipe_fingerprint"} <= set(schema["properties"])


def test_the_frameworks_entries_are_typed_and_an_observers_own_kept_as_given(finished):
    content = json.loads((finished / "manifest.json").read_bytes())
    content["steps"][1] = {**content["steps"][1], "counts": {"tokens": 7}, "fit_seconds": 0.5}
    content["duplicate_ids"] = {"ids": 2, "rows": 4, "message": "2 ids are given to 4 rows"}
    content["dataset_metrics"] = {"output": {"distinct_1": 0.5}}  # an observer's (operators/score), untyped here
    manifest = read(json.dumps(content), "manifest.json")
    assert manifest.steps[1].counts == {"tokens": 7} and manifest.steps[1].fit_seconds == 0.5
    assert manifest.duplicate_ids.ids == 2 and manifest.entry("dataset_metrics") == {"output": {"distinct_1": 0.5}}
    assert manifest.entry("nothing") is None
    assert json.loads(manifest.to_bytes()) == content
