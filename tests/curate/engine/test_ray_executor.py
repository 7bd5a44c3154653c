"""--engine ray on a 2-node Ray cluster on loopback: a recipe for each kind of stage gives the local
engine's bytes (every recipe: bench/sections/every_recipe.py), a killed Ray worker changes nothing, and a node that cannot see the run directory is
refused with a clear error.

One cluster per module (a start costs seconds; raykit.py): a head node and a worker node of one
CPU each, killed at the end whatever happens. Where this runs as root the worker node has a
private tmpfs over one directory: a run writing there is one whose storage that node does not share.
"""

from __future__ import annotations

import hashlib
import contextlib
import os
import random
import re
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from curate import registry
from curate.engine.run.runner import RunOptions, run

ray = pytest.importorskip("ray")

from tests.conftest import write_jsonl  # noqa: E402
from tests.curate.engine.faultkit import REPO  # noqa: E402
from tests.curate.engine.raykit import Cluster  # noqa: E402
from tests.curate.io import motokit  # noqa: E402
from tests.curate.io.motokit import s3_server  # noqa: E402,F401 (a fixture)
from tests.curate.io.test_output_options import locked_store  # noqa: E402,F401 (a fixture)
from tests.curate.io.storekit import local_digest  # noqa: E402
from tests.recipes.offline import demo_args as _demo_args, local_reference, recipe_args  # noqa: E402

# one worker of the test command (--dist loadgroup) runs them all: the cluster is started once
pytestmark = [pytest.mark.ray, pytest.mark.xdist_group("ray")]
RECIPES = REPO / "recipes"
@pytest.fixture(scope="module")
def cluster():
    c = Cluster()
    try:
        c.start(cpus=[1, 1], private_worker=True)
        yield c
    finally:
        c.stop()


@pytest.fixture
def ray_env(monkeypatch):
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")


def digest(out: Path) -> dict[str, str]:
    files = sorted([*out.glob("data/*.parquet"), *out.glob("trace/*.parquet")])
    assert files
    return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


# One recipe for each way Ray runs a stage: CPU tasks (quickstart), a Global fit's map work as
# Ray tasks (near-dedup), an io stage of LLM calls (wrap), WebDataset input (datacomp-basic). A
# model actor pool then fits (text-pruning, a minute here) runs in the harder setting of
# test_a_node_that_cannot_see_the_run_directory_shares_the_work_files_through_s3, and model actors
# on a shared disk in the model-actor case of the kill test. CURATE_TEST_EVERY_RECIPE=1
# (bench/sections/every_recipe.py): every recipe here.
RAY_RECIPES = (sorted(p.stem for p in RECIPES.glob("*.yaml")) if os.environ.get("CURATE_TEST_EVERY_RECIPE") else
               ["quickstart", "near-dedup", "wrap", "datacomp-basic"])


@pytest.mark.parametrize("name", RAY_RECIPES)
def test_recipes_give_the_local_engines_bytes_on_two_ray_nodes(name, cluster, ray_env, cli, tmp_path,
                                                               monkeypatch, request):
    args = recipe_args(name, tmp_path, cli, monkeypatch, request)
    recipe = RECIPES / f"{name}.yaml"
    reference = local_reference(cli, recipe, args, tmp_path / "local")
    on_ray = cli("run", recipe, *args, "--output", tmp_path / "ray", "--engine", "ray", "--address", cluster.address)
    assert on_ray.exit_code == 0, on_ray.output
    assert "Ray: 2 nodes" in on_ray.output
    assert local_digest(tmp_path / "ray") == reference
    assert cluster.worker_node_ran_tasks()


@pytest.mark.parametrize("point, blind", [("task-batch@2", False), ("model-batch@2", False), ("task-batch@2", True)],
                         ids=["cpu-task", "model-actor", "cpu-task-work-store"])
def test_a_ray_worker_killed_mid_task_is_retried_and_the_output_is_identical(point, blind, cluster, ray_env, tmp_path,
                                                                              monkeypatch, request):
    """A Ray task's worker process (a CPU stage) or a model actor's (a model stage) stops at its
    second batch and is killed: Ray runs the task again (on a restarted actor), and the bytes are
    those of the local engine's run. `blind`: the output is where the worker node cannot see it,
    and the work files cross nodes through an S3 work store."""
    from tests.curate.engine import test_pool

    output = store = None
    if blind:
        output = _private(cluster) / f"killed-{os.getpid()}"
        request.addfinalizer(lambda: shutil.rmtree(output, ignore_errors=True))
        store = request.getfixturevalue("s3_store")
    monkeypatch.setitem(registry.catalog(), "fake_model", "tests.curate.engine.model_ops:FakeModel")
    local, _ = test_pool.load(tmp_path, "local")
    run(local, RunOptions(workers=2))
    killed, _ = test_pool.load(tmp_path, "killed", output=output)
    with _worker_killed_at(point, tmp_path, monkeypatch):
        run(killed, RunOptions(engine="ray", address=cluster.address, work_store=store))
    assert digest(Path(killed.output.path)) == digest(tmp_path / "local")


def test_a_ray_worker_killed_in_a_fit_piece_is_retried_and_the_output_is_identical(cluster, ray_env, tmp_path,
                                                                                  monkeypatch):
    """containment_dedup's fit hands its pieces (signing, band joins, verification) to Ray tasks;
    the worker of the second piece is killed after writing its files: Ray runs it again, and the
    bytes are those of the local engine's run."""
    from curate import recipe

    rnd = random.Random(1)
    words = [f"w{i}" for i in range(500)]
    docs = [" ".join(rnd.choice(words) for _ in range(rnd.randint(60, 120))) for _ in range(60)]
    docs += [d.upper() + " more" for d in docs[:20]]  # each contains one of the first 20
    write_jsonl(tmp_path / "in" / "docs.jsonl", [{"text": d} for d in docs])

    def load(out: str):
        return recipe.load(text=f"input: {{path: '{tmp_path / 'in' / '*.jsonl'}', batch_rows: 20}}\n"
                                f"output: {{path: '{tmp_path / out}'}}\nsteps:\n  - containment_dedup: {{}}\n")

    run(load("local"), RunOptions(workers=2))
    with _worker_killed_at("map-piece@2", tmp_path, monkeypatch):
        run(load("killed"), RunOptions(engine="ray", address=cluster.address))
    assert digest(tmp_path / "killed") == digest(tmp_path / "local")
    assert pq.read_table(tmp_path / "local" / "trace").num_rows == 20


@contextlib.contextmanager
def _worker_killed_at(point: str, tmp_path: Path, monkeypatch):
    """Ray workers stop at failpoint `point` (once, whatever restarts), and a thread SIGKILLs the
    one that stopped; the block must have made one stop."""
    once = tmp_path / "fired"
    monkeypatch.setenv("CURATE_FAILPOINT", point)
    monkeypatch.setenv("CURATE_FAILPOINT_ONCE", str(once))
    found: list[int] = []
    killer = threading.Thread(target=lambda: found.append(_kill_stopped(f"CURATE_FAILPOINT_ONCE={once}")))
    killer.start()
    try:
        yield
    finally:
        killer.join()
    assert found and found[0] > 0, f"no Ray worker stopped at the failpoint {point}"


def _kill_stopped(marker: str, timeout: float = 120) -> int:
    """SIGKILL the Ray worker that stopped at its failpoint (state T, `marker` in its environment);
    its pid, or 0 if none stopped in `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
                if state == "T" and marker.encode() in Path(f"/proc/{entry}/environ").read_bytes():
                    os.kill(int(entry), signal.SIGKILL)
                    return int(entry)
            except OSError:
                continue
        time.sleep(0.05)
    return 0


def test_a_node_that_cannot_see_the_run_directory_is_refused(cluster, ray_env, cli, tmp_path):
    if cluster.private is None:
        pytest.skip("needs root and unshare to give the worker node storage of its own")
    args = _demo_args(tmp_path)
    out = cluster.private / "out"
    res = cli("run", RECIPES / "quickstart.yaml", *args, "--output", out, "--engine", "ray",
              "--address", cluster.address)
    assert res.exit_code == 2, res.output
    assert "not visible from Ray node" in res.output and "shared filesystem" in res.output
    assert not out.exists()  # a run refused before any task leaves nothing behind
    assert not ray.is_initialized()  # the connection it opened is closed


def test_progress_reaches_the_reporter_as_with_the_local_engine(cluster, ray_env, tmp_path):
    """The bars are fed the same counts: rows per step, summed over the Ray workers."""
    from curate import recipe
    from curate.engine.run.runner import Reporter
    from tests.curate.engine.test_runner import corpus

    counts: dict[str, list[int]] = {}

    def rows(label: str, rows_in: int, rows_out: int) -> None:
        c = counts.setdefault(label, [0, 0])
        c[0] += rows_in
        c[1] += rows_out

    r = recipe.load(text=f"input: {{path: '{corpus(tmp_path / 'in')}', batch_rows: 64}}\n"
                         f"output: {{path: '{tmp_path / 'out'}'}}\n"
                         "steps:\n  - sql_filter: {where: \"n % 7 <> 3\"}\n  - exact_dedup: {}\n")
    manifest = run(r, RunOptions(engine="ray", address=cluster.address), Reporter(rows=rows))
    for step in manifest.steps:
        assert counts[step.step] == [step.rows_in, step.rows_out], step.step


def test_run_metrics_on_two_ray_nodes_equal_the_local_engines(cluster, ray_env, tmp_path):
    """Task summaries written on either node, merged and measured by the Ray workers: the same figures."""
    from curate import recipe
    from tests.curate.engine.test_dataset_metrics import config, write

    inp = write(tmp_path / "in", 4)
    local = run(recipe.load(text=config(inp, tmp_path / "local")), RunOptions(workers=2))
    on_ray = run(recipe.load(text=config(inp, tmp_path / "ray")), RunOptions(engine="ray", address=cluster.address))
    assert on_ray.entry("dataset_metrics")["output"]["rows"] == on_ray.rows_out
    for m in (local, on_ray):
        del m.entry("dataset_metrics")["cpu_seconds"]
    assert on_ray.entry("dataset_metrics") == local.entry("dataset_metrics")


def test_with_no_address_a_ray_instance_runs_the_job_and_stops_after(ray_env, cli, tmp_path):
    args = _demo_args(tmp_path, docs=200)
    res = cli("run", RECIPES / "quickstart.yaml", *args, "--output", tmp_path / "ray", "--engine", "ray", "-w", "2")
    assert res.exit_code == 0, res.output
    assert "Ray: 1 nodes" in res.output
    assert not ray.is_initialized()  # stopped after the run
    reference = local_reference(cli, RECIPES / "quickstart.yaml", args, tmp_path / "local")
    assert local_digest(tmp_path / "ray") == reference


def test_engine_choices_are_checked(cli, tmp_path, monkeypatch):
    recipe = RECIPES / "quickstart.yaml"
    res = cli("run", recipe, "--engine", "spark")
    assert res.exit_code == 2 and "choose one of local, ray, slurm" in res.output
    res = cli("run", recipe, "--address", "127.0.0.1:6379")
    assert res.exit_code == 2 and "--address is for --engine ray" in res.output


def test_without_ray_installed_the_error_says_what_to_install(monkeypatch, tmp_path):
    from curate.engine.work import engines
    from curate.errors import CurateError

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as if it were not installed
    monkeypatch.delitem(sys.modules, "curate.engine.ray.engine", raising=False)
    with pytest.raises(CurateError, match=r"pip install 'curate\[ray\]'"):
        engines.make("ray", engines.EngineConfig(lambda *a: None, tmp_path))


# --- nodes that do not see the output directory: the work files through an object store ---

@pytest.fixture(scope="module")
def moto_endpoint():
    with motokit.server() as endpoint:
        yield endpoint


@pytest.fixture
def s3_store(moto_endpoint, monkeypatch, request):
    """A fresh bucket on the moto server; its URI. The settings reach the Ray workers as a user's
    would: AWS_* and FSSPEC_* variables in the driver's environment."""
    bucket = f"work-{request.node.name.lower().replace('_', '-')[:40]}-{os.getpid()}".strip("-")
    motokit.use(monkeypatch, moto_endpoint, bucket)
    return f"s3://{bucket}/runs/one"


def _store_keys(uri: str) -> list[str]:
    import fsspec

    fs, root = fsspec.core.url_to_fs(uri)
    fs.invalidate_cache()
    return [k.removeprefix(root + "/") for k in fs.find(root)] if fs.exists(root) else []


def _private(cluster) -> Path:
    if cluster.private is None:
        pytest.skip("needs root and unshare to give the worker node storage of its own")
    return cluster.private


@pytest.mark.parametrize("name", ["near-dedup", "text-pruning"])
def test_a_node_that_cannot_see_the_run_directory_shares_the_work_files_through_s3(name, cluster, ray_env, cli,
                                                                                   tmp_path, monkeypatch, request,
                                                                                   s3_store):
    """The output lies where the worker node cannot see it: tasks there fetch their shards and the
    fitted states (with the files they name) from the store and put their files there; the bytes
    are the local engine's, and the store and the node's mirror are emptied after."""
    private = _private(cluster)
    args = recipe_args(name, tmp_path, cli, monkeypatch, request)
    recipe = RECIPES / f"{name}.yaml"
    reference = local_reference(cli, recipe, args, tmp_path / "local")
    out = private / f"{name}-{os.getpid()}"
    try:
        on_ray = cli("run", recipe, *args, "--output", out, "--engine", "ray", "--address", cluster.address,
                     "--work-store", s3_store)
        assert on_ray.exit_code == 0, on_ray.output
        assert "1 of 2 nodes share the work files through" in on_ray.output
        fetched = int(re.search(r"fetched (\d+) files", on_ray.output).group(1))
        assert fetched > 0  # tasks ran on the node that does not see the output
        assert local_digest(out) == reference
        assert _store_keys(s3_store) == []  # a finished run's work files are gone from the store too
    finally:
        shutil.rmtree(out, ignore_errors=True)


def test_a_work_store_run_killed_after_its_first_stage_resumes_to_the_same_bytes(cluster, ray_env, cli, tmp_path,
                                                                                s3_store):
    """The run process is killed once the first stage is done (its tasks' files in the store, on
    either node); --resume finds them there and in _work/ and gives the local engine's bytes."""
    from tests.curate.engine import faultkit

    private = _private(cluster)
    args = _demo_args(tmp_path)
    recipe = RECIPES / "near-dedup.yaml"
    reference = local_reference(cli, recipe, args, tmp_path / "local")
    out = private / f"resumed-{os.getpid()}"
    ray_args = [*args, "--output", str(out), "--engine", "ray", "--address", cluster.address, "--work-store", s3_store]
    try:
        proc = faultkit.start(recipe, *ray_args, failpoint="stage-done")
        assert faultkit.wait_for_failpoint(proc), proc.stderr.read().decode()[-3000:]
        faultkit.kill(proc, whole_group=True)
        proc.wait()
        assert any(k.startswith("stage-0/done/") for k in _store_keys(s3_store))
        res = cli("run", recipe, *ray_args, "--resume")
        assert res.exit_code == 0, res.output
        assert local_digest(out) == reference
    finally:
        shutil.rmtree(out, ignore_errors=True)


def test_a_work_store_holding_other_files_is_refused_and_kept(cluster, ray_env, cli, tmp_path, s3_store):
    import fsspec

    fs, root = fsspec.core.url_to_fs(s3_store)
    fs.pipe_file(f"{root}/precious.txt", b"not curate's")
    res = cli("run", RECIPES / "quickstart.yaml", *_demo_args(tmp_path, docs=50), "--output", tmp_path / "out",
              "--engine", "ray", "--address", cluster.address, "--work-store", s3_store)
    assert res.exit_code == 2, res.output
    assert "not a curate run's work files" in res.output
    assert fs.cat_file(f"{root}/precious.txt") == b"not curate's"
    assert not (tmp_path / "out").exists()


def test_work_store_options_are_checked(cli, tmp_path):
    recipe = RECIPES / "quickstart.yaml"
    res = cli("run", recipe, *_demo_args(tmp_path, docs=50), "--output", tmp_path / "out", "--engine", "ray",
              "--work-store", "nosuchfs://bucket/x")
    assert res.exit_code == 2 and "--work-store: cannot open nosuchfs://bucket/x" in res.output
    assert not (tmp_path / "out").exists()


# --- inputs and output on a store: nothing of the run mounted on the worker node ---

@pytest.mark.parametrize("name, pieces, keep", [("near-dedup", True, []), ("quickstart", False, ["--keep-work"])])
def test_a_run_from_s3_to_s3_needs_nothing_mounted_on_the_worker_node(name, pieces, keep, cluster, ray_env, cli,
                                                                     tmp_path, monkeypatch, request, moto_endpoint):
    """Input and output on S3, no --work-store, and the run's local work directory where the
    worker node cannot see it: that node's tasks and, with `pieces`, a fit's parallel pieces
    (containment_dedup's signing, band joins and verification) share their files through the
    output's own prefix; the bytes are the local engine's, and the finished prefix holds the
    published run alone (with --keep-work too: the work is kept in the local directory)."""
    from tests.curate.io.storekit import input_on_store, store_digest, store_names

    private = _private(cluster)
    args = recipe_args(name, tmp_path, cli, monkeypatch, request)
    recipe = RECIPES / f"{name}.yaml"
    reference = local_reference(cli, recipe, args, tmp_path / "local")
    bucket = f"s3s3-{name}-{os.getpid()}"
    motokit.use(monkeypatch, moto_endpoint, bucket)
    stored = input_on_store(args, recipe, f"s3://{bucket}/input")
    cache = private / f"cache-{name}-{os.getpid()}"  # the run's local directory: the head's alone
    request.addfinalizer(lambda: shutil.rmtree(cache, ignore_errors=True))
    monkeypatch.setenv("CURATE_CACHE_DIR", str(cache))
    out = f"s3://{bucket}/out"
    res = cli("run", recipe, *stored, "--output", out, "--engine", "ray", "--address", cluster.address,
              "--no-report", *keep)
    assert res.exit_code == 0, res.output
    assert f"1 of 2 nodes share the work files through {out}/_work/files" in res.output
    assert int(re.search(r"fetched (\d+) files of tasks", res.output).group(1)) > 0
    if pieces:
        assert int(re.search(r"(\d+) fit pieces ran on nodes that do not see", res.output).group(1)) > 0
    assert store_digest(out) == reference
    assert {n.split("/")[0] for n in store_names(out)} == {"data", "trace", "manifest.json"}


@pytest.mark.parametrize("input_on", ["local disk", "s3"])
def test_a_store_reached_with_its_storage_options_alone_gives_the_local_bytes_on_two_nodes(input_on, cluster, ray_env,
                                                                                          cli, tmp_path, monkeypatch,
                                                                                          request, s3_server,
                                                                                          locked_store):
    """moto checking every signature, and no credential nor endpoint of it in any environment (the
    driver's, and so the Ray workers'): the output (and the input, on S3) is reached with its
    storage_options alone, by the head and by the worker node that does not see the run's local
    directory (its files go through the output's prefix); the bytes are the local engine's. With
    a wrong secret for the output the same run is refused before any task runs, naming it."""
    from tests.curate.io.storekit import input_on_store, store_digest, store_names

    private = _private(cluster)
    args = _demo_args(tmp_path)
    recipe = RECIPES / "near-dedup.yaml"
    reference = local_reference(cli, recipe, args, tmp_path / "local")
    key, secret = locked_store
    options = {"endpoint_url": s3_server, "key": key, "secret": secret}
    if input_on == "s3":
        args = [*input_on_store(args, recipe, "s3://locked/input", options),
                "--set", f"input.storage_options={options}"]
    cache = private / f"cache-opts-{os.getpid()}"  # the run's local directory: the head's alone
    request.addfinalizer(lambda: shutil.rmtree(cache, ignore_errors=True))
    monkeypatch.setenv("CURATE_CACHE_DIR", str(cache))
    out = "s3://locked/out"
    ray_args = [*args, "--output", out, "--engine", "ray", "--address", cluster.address, "--no-report"]
    refused = cli("run", recipe, *ray_args, "--set", f"output.storage_options={ {**options, 'secret': 'wrong'} }")
    assert refused.exit_code == 2 and f"output {out}" in refused.output, refused.output
    res = cli("run", recipe, *ray_args, "--set", f"output.storage_options={options}")
    assert res.exit_code == 0, res.output
    assert f"1 of 2 nodes share the work files through {out}/_work/files" in res.output
    assert int(re.search(r"fetched (\d+) files of tasks", res.output).group(1)) > 0
    assert store_digest(out, options) == reference
    assert {n.split("/")[0] for n in store_names(out, options)} == {"data", "trace", "manifest.json"}
