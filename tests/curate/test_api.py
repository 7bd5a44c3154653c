"""The Python API (curate/api.py): curate.run gives the bytes `curate run` gives; Recipe loads,
edits, checks and dumps; curate.ops lists and describes the catalog; `import curate` stays light."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import curate
from curate.demo import generate
from curate.errors import CurateError, RecipeError

RECIPE = """\
name: api
seed: 0
input:
  path: {input}
  id_column: id
output:
  path: {output}
steps:
  - normalize_text: {{}}
  - gopher_quality: {{}}
  - exact_dedup: {{}}
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """The demo corpus, small: planted duplicates and junk, so every step removes rows."""
    root = tmp_path_factory.mktemp("demo")
    generate(root, docs=600, files=3, seed=0)
    return root


def files_of(run_dir: Path) -> dict[str, bytes]:
    """Every file of data/ and trace/, by its path in the run directory."""
    return {str(p.relative_to(run_dir)): p.read_bytes()
            for sub in ("data", "trace") for p in sorted((run_dir / sub).rglob("*")) if p.is_file()}


def test_curate_run_writes_the_bytes_of_the_command(cli, corpus, tmp_path, manifest_at):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(RECIPE.format(input=f"{corpus}/*.jsonl.gz", output=tmp_path / "unused"))
    by_cli = cli("run", recipe, "--output", tmp_path / "cli", "--set", "steps[1].gopher_quality.min_words=30",
                 "--workers", "2", "--no-report")
    assert by_cli.exit_code == 0, by_cli.output
    run = curate.run(recipe, output=str(tmp_path / "api"), set={"steps[1].gopher_quality.min_words": 30},
                     workers=2, report=False, progress=False)
    assert isinstance(run, curate.Run) and run.path == tmp_path / "api"
    by_api, by_command = files_of(tmp_path / "api"), files_of(tmp_path / "cli")
    assert any(name.startswith("data/") for name in by_api) and any(name.startswith("trace/") for name in by_api)
    assert by_api == by_command
    cli_manifest = manifest_at(tmp_path / "cli")
    # the same recipe, --set applied alike (the output paths differ, so the fingerprints do too)
    assert {**run.manifest.recipe, "output": None} == {**cli_manifest.recipe, "output": None}
    assert run.manifest.recipe["steps"][1] == {"gopher_quality": {"min_words": 30}}
    assert [s["rows_out"] for s in run.funnel()] == [s.rows_out for s in cli_manifest.steps]


def test_the_run_reads_back_its_output_and_trace(corpus, tmp_path):
    recipe = curate.Recipe.from_yaml(RECIPE.format(input=f"{corpus}/*.jsonl.gz", output=tmp_path / "out"))
    run = curate.run(recipe, workers=1, report=False, progress=False)
    table = run.to_arrow()
    assert table.num_rows == run.rows_out == run.manifest.rows_out < run.rows_in
    assert table.equals(pq.read_table([str(p) for p in sorted((tmp_path / "out" / "data").glob("*.parquet"))]))
    assert run.to_polars().height == run.rows_out
    assert run.to_dataset().to_table(columns=["id"]).column("id").equals(table.column("id"))
    assert run.scan().select("id").collect().height == run.rows_out
    removed = {s["step"]: s["removed"] for s in run.funnel()}
    assert run.trace("exact_dedup").num_rows == removed["03_exact_dedup"] > 0
    assert run.trace().num_rows == sum(removed.values())
    assert set(run.trace("02_gopher_quality").column("reason").to_pylist()) <= set(
        run.manifest.steps[2].reasons)
    with pytest.raises(KeyError, match="no step 'minhash_dedup'"):
        run.trace("minhash_dedup")
    assert "| 03_exact_dedup |" in run._repr_markdown_()
    assert curate.open_run(tmp_path / "out").manifest.to_dict() == run.manifest.to_dict()


def test_a_jsonl_output_reads_back_as_the_same_rows(corpus, tmp_path):
    recipe = RECIPE.format(input=f"{corpus}/*.jsonl.gz", output=tmp_path / "pq")
    as_parquet = curate.run(recipe, workers=1, report=False, progress=False).to_arrow()
    as_jsonl = curate.run(recipe, output=str(tmp_path / "js"), set=["output.format=jsonl", "output.compression=gzip"],
                          workers=1, report=False, progress=False)
    assert all(f.endswith(".jsonl.gz") for f in as_jsonl.data_files())
    assert as_jsonl.to_arrow().column("id").to_pylist() == as_parquet.column("id").to_pylist()


def test_resume_of_a_finished_run_returns_it_without_running(corpus, tmp_path):
    recipe = RECIPE.format(input=f"{corpus}/*.jsonl.gz", output=tmp_path / "out")
    first = curate.run(recipe, workers=1, report=False, progress=False)
    mtime = (tmp_path / "out" / "manifest.json").stat().st_mtime_ns
    again = curate.run(recipe, workers=1, resume=True, report=False, progress=False)
    assert again.manifest.to_dict() == first.manifest.to_dict() and (tmp_path / "out" / "manifest.json").stat().st_mtime_ns == mtime
    with pytest.raises(CurateError, match="another recipe"):  # as `curate run --resume` refuses it
        curate.run(recipe, set={"steps[1].gopher_quality.min_words": 10}, resume=True, report=False, progress=False)


def test_errors_are_the_commands_messages_as_exceptions(tmp_path):
    with pytest.raises(CurateError, match="no input files match|not found"):
        curate.run(RECIPE.format(input=tmp_path / "nothing-*.jsonl", output=tmp_path / "out"), progress=False)
    with pytest.raises(RecipeError, match=r"steps\[1\].gopher_quality.min_words"):
        curate.run(RECIPE.format(input=tmp_path, output=tmp_path / "out"),
                   set={"steps[1].gopher_quality.min_words": -3}, progress=False)
    with pytest.raises(CurateError, match="choose one of local, ray, slurm"):
        curate.run(RECIPE.format(input=tmp_path, output=tmp_path / "out"), engine="spark")
    assert not (tmp_path / "out").exists()


def test_a_recipe_loads_edits_checks_and_dumps(tmp_path):
    recipe = curate.Recipe.load(Path(__file__).resolve().parents[2] / "recipes" / "quickstart.yaml")
    assert [next(iter(s)) for s in recipe.steps] == ["normalize_text", "gopher_quality", "exact_dedup"]
    recipe.set("steps[1].gopher_quality.min_words", 30).set("output.path", str(tmp_path / "o"))
    recipe.set("steps[0].normalize_text.unicode_form", "NFKC")
    recipe.add_step("sample", fraction=1.0e-05).remove_step("exact_dedup")
    model = recipe.validate()  # the recipe alone, as `curate validate --no-data`
    assert [s.name for s in model.steps] == ["normalize_text", "gopher_quality", "sample"]
    assert model.steps[1].params.min_words == 30 and model.steps[2].params.fraction == 1.0e-05
    assert model.output.path == str(tmp_path / "o")
    saved = recipe.save(tmp_path / "edited.yaml")
    assert curate.Recipe.load(saved) == recipe == curate.Recipe.from_yaml(recipe.to_yaml())
    assert curate.Recipe.from_dict(recipe.doc).validate().fingerprint() == model.fingerprint()
    recipe.set("steps[1].gopher_quality.min_wrds", 3)
    with pytest.raises(RecipeError, match=r"steps\[1\].gopher_quality.min_wrds: unknown parameter. Did you mean min_words"):
        recipe.validate()
    with pytest.raises(KeyError, match="no step runs 'minhash_dedup'"):
        recipe.remove_step("minhash_dedup")


def test_set_values_keep_their_python_types():
    recipe = curate.Recipe.from_dict({"input": {"path": "x"}, "output": {"path": "o"}, "steps": []})
    values = {"name": "007", "seed": 3, "memory_gb": 1.5e-3, "allow_empty": True,
              "report": {"by": "a: b"}, "input.path": ["a.jsonl", "b # c.jsonl"]}
    for key, value in values.items():
        recipe.set(key, value)
    assert recipe.doc["name"] == "007" and recipe.doc["memory_gb"] == 1.5e-3 and recipe.doc["allow_empty"] is True
    assert recipe.doc["report"] == {"by": "a: b"} and recipe.doc["input"]["path"] == ["a.jsonl", "b # c.jsonl"]


def test_the_operator_catalog():
    from curate import registry

    assert curate.ops.names() == sorted(registry.catalog())
    info = curate.ops.describe("exact_dedup")
    assert info.kind == "global" and info.summary and info.module == registry.catalog()["exact_dedup"]
    by_name = {p.name: p for p in info.parameters}
    assert by_name["columns"].column == "reads" and not by_name["columns"].required
    assert "columns" in info.params_schema["properties"]
    assert str(info).startswith("exact_dedup (global): ")
    with pytest.raises(RecipeError, match="Did you mean exact_dedup"):
        curate.ops.describe("exact_dedupe")


def test_import_curate_loads_nothing_heavy():
    code = ("import sys, curate\n"
            "print(sorted(m for m in ('pyarrow', 'polars', 'pydantic', 'curate.api', 'curate.engine') if m in sys.modules))\n"
            "curate.Recipe\nprint('curate.api_recipe' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:2] == ["[]", "True"]


def test_a_script_without_a_main_guard_runs_on_spawned_workers(corpus, tmp_path):
    """The workers are spawned, and spawn re-imports the parent's script: curate.run at a
    script's top level (no `if __name__ == "__main__":`) must not run again in each worker."""
    script = tmp_path / "script.py"
    script.write_text("import curate\n"
                      f"run = curate.run({RECIPE.format(input=f'{corpus}/*.jsonl.gz', output=tmp_path / 'out')!r}, "
                      "workers=2, report=False, progress=False)\n"
                      "print('rows out', run.rows_out)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("rows out") == 1


def test_a_run_on_a_store_reads_back_from_there(corpus, tmp_path):
    """An output at a URI (memory://, which the run's one process shares with the test)."""
    local = curate.run(RECIPE.format(input=f"{corpus}/*.jsonl.gz", output=tmp_path / "out"), workers=1,
                       report=False, progress=False)
    remote = curate.run(RECIPE.format(input=f"{corpus}/*.jsonl.gz", output="memory://curate-api-test/run"),
                        workers=1, report=False, progress=False)
    assert remote.path == "memory://curate-api-test/run" and not remote.local
    assert remote.to_arrow().equals(local.to_arrow())
    assert remote.trace("exact_dedup").num_rows == local.trace("exact_dedup").num_rows > 0
