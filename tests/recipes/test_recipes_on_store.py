"""Recipes with their input and output on a store (moto's S3 server on loopback), and also with
only one of them there, give the local run's data/ and trace/ bytes. The store code a run goes
through is the same whatever its steps: the suite runs the recipes without models (JSON lines,
Parquet and WARC inputs) and datacomp-basic (WebDataset in and out); CURATE_TEST_EVERY_RECIPE=1
(bench/sections/every_recipe.py) runs every recipe, those with models and the other image-text ones too."""

import os
from pathlib import Path

import pytest

from tests.curate.io import motokit
from tests.curate.io.motokit import s3_server  # noqa: F401 (a fixture)
from tests.curate.io.storekit import input_on_store, local_digest, store_digest
from tests.recipes.offline import recipe_args

RECIPES = Path(__file__).resolve().parents[2] / "recipes"
# The ones with models (tiny local ones, but loaded in a model worker for each run)
WITH_MODELS = {"text-pruning", "clip-pruning", "sft-qdc", "web-text"}


EVERY_RECIPE = bool(os.environ.get("CURATE_TEST_EVERY_RECIPE"))


# Every sampled recipe runs with both input and output on the store; one on the store and one local
# (where the work directory goes, which side names the files) is the same code for every recipe:
# two recipes run it, a JSON-lines one and a WebDataset one.
ONE_SIDED = {"quickstart", "datacomp-basic"}


def _sampled(name: str) -> bool:
    return EVERY_RECIPE or name == "datacomp-basic" or not (name in WITH_MODELS or name.startswith("datacomp-"))


@pytest.mark.parametrize("name", [p.stem for p in sorted(RECIPES.glob("*.yaml")) if _sampled(p.stem)])
def test_every_recipe_gives_the_local_bytes_with_its_input_or_output_on_s3(name, s3_server, cli, tmp_path,
                                                                           monkeypatch, request):
    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "cache"))  # where a store run's work directory is
    args = recipe_args(name, tmp_path, cli, monkeypatch, request)
    client = motokit.use(monkeypatch, s3_server, f"in-{name}")
    client.create_bucket(Bucket=f"out-{name}")
    recipe = RECIPES / f"{name}.yaml"
    local = cli("run", recipe, *args, "--output", tmp_path / "local", "-w", "2", "--no-report")
    assert local.exit_code == 0, local.output
    reference = local_digest(tmp_path / "local")
    assert any(p.startswith("data/") for p in reference)
    stored = input_on_store(args, recipe, f"s3://in-{name}/input")
    runs = [(stored, f"s3://out-{name}/both")]
    if name in ONE_SIDED or EVERY_RECIPE:
        runs += [(args, f"s3://out-{name}/out"), (stored, tmp_path / "from-store")]
    for inputs, output in runs:
        res = cli("run", recipe, *inputs, "--output", output, "-w", "2", "--no-report")
        assert res.exit_code == 0, res.output
        got = store_digest(output) if isinstance(output, str) else local_digest(output)
        if READ_TRACE in reference:  # rows the reader could not take: their detail names where the file was read
            assert read_trace(output) == read_trace(tmp_path / "local"), output
            got, expected = ({k: v for k, v in d.items() if k != READ_TRACE} for d in (got, reference))
        else:
            expected = reference
        assert got == expected, output


READ_TRACE = "trace/00_read.parquet"


def read_trace(run) -> list[dict]:
    """The read trace's rows, each detail's file named by its base name (a path here, a URI there)."""
    import fsspec
    import pyarrow.parquet as pq

    with fsspec.open(f"{run}/{READ_TRACE}", "rb") as f:  # a local path, or the store's URI (s3fs)
        rows = pq.read_table(f).to_pylist()
    for row in rows:
        where, _, rest = row["detail"].partition(", ")
        row["detail"] = f"{where.rsplit('/', 1)[-1]}, {rest}"
    return rows
