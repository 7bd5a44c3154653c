"""--resume of a run whose output is at a URI, on another machine (no local work directory for
it): with --work-store, each task's files and each fitted state went to the store as they were
made, so the resumed run fetches them and runs only what was not done; the bytes are the
uninterrupted run's, the input fingerprints still checked."""

import fsspec
import pytest

from curate.engine.work import engines
from curate.engine.local import engine as local_engine
from curate.errors import CurateError
from curate_operators.dedup.exact import ExactDedup
from tests.conftest import write_jsonl
from tests.curate.engine import faultkit
from tests.curate.io.motokit import s3_server  # noqa: F401 (a fixture)
from tests.curate.io.storekit import input_on_store, store_digest, store_names
from tests.curate.io.test_remote_outputs import QUICKSTART, resume_corpus, s3, store_recipe  # noqa: F401 (fixtures)

OUT = "s3://out/away"
STORE = f"{OUT}/_work/files"  # the output's own prefix, as the Ray engine's default work store


def kill_at(point: str, recipe, machine, monkeypatch) -> dict[int, set[str]]:
    """Run `recipe` on `machine` (its own CURATE_CACHE_DIR) with the work store until `point`,
    SIGKILL it; the tasks the store then holds as done, by stage."""
    monkeypatch.setenv("CURATE_CACHE_DIR", str(machine))
    proc = faultkit.start(recipe, "--work-store", STORE, failpoint=point)
    assert faultkit.wait_for_failpoint(proc), f"the run never reached {point}: {proc.stderr.read().decode()}"
    faultkit.kill(proc, whole_group=True)
    assert "manifest.json" not in store_names(OUT)  # killed: no finished run
    fs, root = fsspec.core.url_to_fs(STORE)
    fs.invalidate_cache()
    done: dict[int, set[str]] = {}
    for path in fs.glob(f"{root}/stage-*/done/*.json"):
        stage = int(path.split("/stage-")[1].split("/")[0])
        done.setdefault(stage, set()).add(path.rsplit("/", 1)[1].removesuffix(".json"))
    return done


def counted(monkeypatch) -> tuple[list[tuple[int, str]], list[int]]:
    """The tasks this process runs (stage, name) and the times it fits exact_dedup."""
    ran, fits = [], []
    run_task, fit = local_engine.run_task, ExactDedup.fit

    def running(ctx, task, progress=None):
        ran.append((ctx.stage.index, task.name))
        return run_task(ctx, task, progress)

    def fitting(self, *args, **kwargs):
        fits.append(1)
        return fit(self, *args, **kwargs)

    monkeypatch.setattr(local_engine, "run_task", running)
    monkeypatch.setattr(ExactDedup, "fit", fitting)
    return ran, fits


@pytest.fixture
def away(resume_corpus, s3, tmp_path):
    """The input on the store, a recipe writing OUT, and the reference bytes."""
    root, reference = resume_corpus
    input_on_store(["--input", f"{root}/in/*.jsonl.gz"], QUICKSTART, "s3://inp/resume")
    return store_recipe(tmp_path, "away", OUT), reference


# In stage 0 (4 tasks, one per input file), in stage 1 after the fit (4 tasks), while publishing;
# the resume given --work-store again, or not (the store's copy of the fingerprints names it)
@pytest.mark.parametrize("again", [True, False], ids=["work-store-again", "remembered"])
@pytest.mark.parametrize("point, fitted_again", [("task-done", 1), ("task-done@6", 0), ("published-data", 0)])
def test_a_run_resumed_on_another_machine_runs_only_what_was_not_done(away, cli, tmp_path, monkeypatch, point,
                                                                     fitted_again, again):
    recipe, reference = away
    done = kill_at(point, recipe, tmp_path / "machine-a", monkeypatch)
    assert done, "no task had finished"
    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "machine-b"))  # no work directory for OUT here
    ran, fits = counted(monkeypatch)
    res = cli("run", recipe, "--resume", *(["--work-store", STORE] if again else []), "-w", "1")
    assert again or f"continuing with the work store the run was given: {STORE}" in res.output
    assert res.exit_code == 0, res.output
    assert store_digest(OUT) == reference
    assert store_names(OUT) == sorted(["manifest.json", "report.html", *reference])  # no _work/ left
    assert not set(ran) & {(stage, name) for stage, names in done.items() for name in names}
    assert len(ran) + sum(map(len, done.values())) == 8  # every task ran once, before the kill or after
    assert len(fits) == fitted_again
    assert "fetched from s3://out/away/_work/files" in res.output


def test_a_run_with_its_work_store_beside_the_output_copies_its_shards_there_not_uploading_them_twice(
        away, cli, tmp_path, monkeypatch):
    """Each task's shards went to the store when it finished; publishing copies them into data/
    within the store (no byte through this machine again) and uploads only what it made itself."""
    from curate.engine.rundir.store_files import StoreFiles

    recipe, reference = away
    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "machine"))
    copied, uploaded = [], []
    copy, upload = StoreFiles.copy, StoreFiles.upload
    monkeypatch.setattr(StoreFiles, "copy", lambda self, pairs: (copied.extend(t for _, t in pairs), copy(self, pairs)))
    monkeypatch.setattr(StoreFiles, "upload", lambda self, pairs: (uploaded.extend(t for _, t in pairs),
                                                                   upload(self, pairs)))
    res = cli("run", recipe, "--work-store", STORE, "-w", "1")
    assert res.exit_code == 0, res.output
    assert store_digest(OUT) == reference
    data = sorted(name for name in reference if name.startswith("data/"))
    assert data and sorted(t.split(f"{OUT.removeprefix('s3://')}/", 1)[1] for t in copied) == data
    assert not [t for t in uploaded if "/data/" in t]
    assert any("/trace/" in t for t in uploaded)  # merged here per step: new files, uploaded


def test_a_resume_elsewhere_refuses_an_input_changed_since(away, cli, tmp_path, monkeypatch):
    """The fingerprints (size and ETag) are checked as locally: this machine reads them on the store."""
    recipe, _ = away
    kill_at("task-done", recipe, tmp_path / "machine-a", monkeypatch)
    fs = fsspec.filesystem("s3")
    fs.pipe_file("inp/resume/p1.jsonl.gz", fs.cat_file("inp/resume/p0.jsonl.gz"))  # replaced
    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "machine-b"))
    res = cli("run", recipe, "--resume", "--work-store", STORE, "-w", "1")
    assert res.exit_code == 2
    assert f"{OUT}: cannot resume: the input files changed since the interrupted run" in res.output


def test_a_resume_elsewhere_that_fails_early_keeps_what_the_store_holds(away, cli, tmp_path, monkeypatch):
    recipe, reference = away
    done = kill_at("task-done@6", recipe, tmp_path / "machine-a", monkeypatch)
    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "machine-b"))
    real = engines.make

    def unreachable(*args, **kwargs):
        raise CurateError("the cluster is not reachable")

    monkeypatch.setattr(engines, "make", unreachable)
    res = cli("run", recipe, "--resume", "--work-store", STORE, "-w", "1")
    assert res.exit_code == 2 and "not reachable" in res.output
    monkeypatch.setattr(engines, "make", real)
    ran, fits = counted(monkeypatch)
    assert cli("run", recipe, "--resume", "--work-store", STORE, "-w", "1").exit_code == 0
    assert store_digest(OUT) == reference
    assert len(ran) == 8 - sum(map(len, done.values())) and not fits


def test_the_local_engine_takes_a_work_store_for_an_output_at_a_uri_only(cli, tmp_path):
    """A local output's _work/ is what --resume continues from, on the machine whose disk it is on."""
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"id": 1, "text": "a document"}])
    res = cli("run", QUICKSTART, "--input", tmp_path / "in" / "a.jsonl", "--output", tmp_path / "out",
              "--work-store", "s3://out/x")
    assert res.exit_code == 2
    assert "with the local engine, --work-store is for an output at a URI" in res.output
    assert not (tmp_path / "out").exists()
