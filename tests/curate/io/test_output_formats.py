"""output.format jsonl / hf and output.upload: what a run publishes besides Parquet, and where."""

import gzip
import json
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from pydantic import ValidationError

from curate import recipe
from curate.engine.run.runner import RunOptions, run
from curate.errors import CurateError
from tests.conftest import write_jsonl
from tests.curate.engine import faultkit
from tests.curate.io import motokit

STEPS = "steps:\n  - sql_filter: {where: \"n % 5 <> 0\"}\n"


def corpus(root: Path) -> str:
    for f in range(2):
        write_jsonl(root / f"part-{f}.jsonl", [{"text": f"doc {f}-{i} ünïcode", "n": f * 100 + i,
                                                "tags": ["a", str(i)]} for i in range(100)])
    return str(root / "*.jsonl")


def recipe_text(inp: str, out: Path, output: str = "") -> str:
    return f"input: {{path: '{inp}', batch_rows: 32}}\noutput: {{path: '{out}'{output}}}\n{STEPS}"


def go(tmp_path, output: str = "", name="out", **opts):
    inp = corpus(tmp_path / "in")
    out = tmp_path / name
    return run(recipe.load(text=recipe_text(inp, out, output)), RunOptions(workers=2, **opts)), out


def expected(tmp_path):
    m, out = go(tmp_path, name="parquet")
    return pq.read_table(out / "data").to_pylist()


def by_id(rows):
    return sorted(rows, key=lambda r: r["_id"])


@pytest.mark.parametrize("compression, suffix, opener", [
    (None, ".jsonl", open), ("gzip", ".jsonl.gz", gzip.open), ("zstd", ".jsonl.zst", None)])
def test_jsonl_output_holds_the_rows_of_the_parquet_output(tmp_path, compression, suffix, opener):
    extra = ", format: jsonl" + (f", compression: {compression}" if compression else "")
    m, out = go(tmp_path, extra)
    files = sorted((out / "data").iterdir())
    assert files and all(f.name.endswith(suffix) and f.name.startswith("part-") for f in files)
    assert m.format == "jsonl" and m.data_files == len(files)
    if opener is None:
        import zstandard

        lines = [ln for f in files for ln in zstandard.ZstdDecompressor().decompress(
            f.read_bytes(), max_output_size=1 << 24).decode().splitlines()]
    else:
        lines = [ln for f in files for ln in opener(f, "rt", encoding="utf-8").read().splitlines()]
    assert by_id(json.loads(ln) for ln in lines) == by_id(expected(tmp_path))
    assert m.rows_out == len(lines) == 160


def test_hf_output_loads_with_datasets_load_from_disk(tmp_path):
    datasets = pytest.importorskip("datasets")
    m, out = go(tmp_path, ", format: hf")
    ds = datasets.load_from_disk(str(out / "data"))
    assert by_id(ds.to_list()) == by_id(expected(tmp_path))
    assert ds.features["tags"].feature.dtype == "string"
    assert m.data_files == len(json.loads((out / "data" / "state.json").read_text())["_data_files"])


def test_compression_must_fit_the_format(tmp_path):
    with pytest.raises((ValidationError, CurateError), match="does not apply to format jsonl"):
        recipe.load(text=recipe_text("x.jsonl", tmp_path / "o", ", format: jsonl, compression: snappy"))
    with pytest.raises((ValidationError, CurateError), match="does not apply to format hf"):
        recipe.load(text=recipe_text("x.jsonl", tmp_path / "o", ", format: hf, compression: zstd"))


def test_upload_to_a_file_uri_copies_the_run_manifest_included(tmp_path):
    remote = tmp_path / "remote" / "run1"
    m, out = go(tmp_path, f", format: jsonl, upload: 'file://{remote}'")
    assert (remote / "manifest.json").read_bytes() == (out / "manifest.json").read_bytes()
    local = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    copied = sorted(p.relative_to(remote).as_posix() for p in remote.rglob("*") if p.is_file())
    assert copied == local


def test_upload_killed_before_the_manifest_is_redone_by_resume(tmp_path):
    inp = corpus(tmp_path / "in")
    remote = tmp_path / "remote"
    path = tmp_path / "recipe.yaml"
    path.write_text(recipe_text(inp, tmp_path / "out", f", upload: 'file://{remote}'"))
    proc = faultkit.start(path, failpoint="uploaded-data")
    assert faultkit.wait_for_failpoint(proc)
    faultkit.kill(proc, whole_group=True)
    assert (remote / "data").is_dir() and not (remote / "manifest.json").exists()
    m = run(recipe.load(path), RunOptions(workers=1, resume=True))
    assert m.already_finished
    assert (remote / "manifest.json").read_bytes() == (tmp_path / "out" / "manifest.json").read_bytes()
    assert pl.read_parquet(remote / "data" / "*.parquet").height == 160


def test_upload_to_s3_on_a_local_moto_server(tmp_path, monkeypatch):
    with motokit.server() as endpoint:
        s3 = motokit.use(monkeypatch, endpoint, "curated")
        m, out = go(tmp_path, ", format: jsonl, compression: gzip, upload: 's3://curated/web/run1'")
        keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket="curated")["Contents"])
        assert "web/run1/manifest.json" in keys
        assert len([k for k in keys if k.startswith("web/run1/data/")]) == m.data_files
        body = s3.get_object(Bucket="curated", Key="web/run1/manifest.json")["Body"].read()
        assert body == (out / "manifest.json").read_bytes()


def test_upload_to_an_unknown_scheme_is_a_clear_error(tmp_path):
    with pytest.raises(CurateError, match="output.upload"):
        go(tmp_path, ", upload: 'nosuchfs://bucket/x'")
    assert not (tmp_path / "out").exists()  # refused before the run started
