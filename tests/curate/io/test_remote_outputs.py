"""Outputs at a URI (memory://, file://, s3:// on moto's server): the local run's bytes; the manifest
is the commit marker, so a prefix killed at any failpoint is never a finished run, and --resume
gives the uninterrupted bytes; --overwrite replaces only a prefix curate wrote, manifest first;
a second run is refused by the store's lease; a store that cannot be written is exit 2."""

import itertools
import json
import uuid
from pathlib import Path

import fsspec
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from curate import demo
from curate.engine.local import engine as local_engine
from curate.engine.run import publish as publish_module
from curate.engine.rundir.layout import RunLayout, is_run_directory
from curate.engine.rundir.run_dir import finished_manifest
from curate.engine.rundir.store_files import StoreFiles
from curate.errors import InputError
from tests.curate.engine import faultkit
from tests.curate.engine.test_resume import PHASES, RECIPE, write_input
from tests.curate.io import motokit
from tests.curate.io.motokit import s3_server  # noqa: F401 (a fixture)
from tests.curate.io.storekit import input_on_store, local_digest, store_digest, store_names

REPO = Path(__file__).resolve().parents[3]
QUICKSTART = REPO / "recipes" / "quickstart.yaml"


@pytest.fixture
def s3(monkeypatch, s3_server):
    """Buckets `inp` and `out` on the server, emptied and removed after the test."""
    client = motokit.use(monkeypatch, s3_server, "inp")
    client.create_bucket(Bucket="out")
    yield client
    for bucket in ("inp", "out"):
        for obj in client.list_objects_v2(Bucket=bucket).get("Contents", []):
            client.delete_object(Bucket=bucket, Key=obj["Key"])
        client.delete_bucket(Bucket=bucket)


@pytest.fixture(autouse=True)
def work_dirs(tmp_path, monkeypatch):
    """Store runs work in $CURATE_CACHE_DIR/runs/: here, under the test's directory."""
    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "runs"


@pytest.fixture
def memory_root():
    root = f"memory://out-{uuid.uuid4().hex}"
    yield root
    fs = fsspec.filesystem("memory")
    if fs.exists(root):
        fs.rm(root, recursive=True)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo")
    demo.generate(root, docs=400, files=2)
    return root


def test_quickstart_to_memory_and_file_uris_gives_the_local_bytes(cli, tmp_path, corpus, memory_root, work_dirs,
                                                                 manifest_at):
    args = ("run", QUICKSTART, "--input", f"{corpus}/*.jsonl.gz", "--no-report")
    assert cli(*args, "--output", tmp_path / "local", "-w", "2").exit_code == 0
    reference = local_digest(tmp_path / "local")
    assert reference
    # the workers never touch the store (they write the local work directory), so even memory://,
    # which lives in this process only, takes any number of them
    res = cli(*args, "--output", memory_root, "-w", "2")
    assert res.exit_code == 0, res.output
    assert f"to {memory_root}/data" in res.output
    assert store_digest(memory_root) == reference
    assert store_names(memory_root) == sorted(["manifest.json", *reference])  # no _work, lock or .tmp left there
    from curate.manifest import read

    where = f"{memory_root}/manifest.json"
    manifest = read(fsspec.filesystem("memory").cat_file(where), where)
    local_manifest = manifest_at(tmp_path / "local")
    assert manifest.outputs == local_manifest.outputs
    assert [s.removed for s in manifest.steps] == [s.removed for s in local_manifest.steps]
    file_uri = f"file://{tmp_path}/file-out"
    assert cli(*args, "--output", file_uri, "-w", "1").exit_code == 0
    assert local_digest(tmp_path / "file-out") == reference
    assert sorted(p.name for p in (tmp_path / "file-out").iterdir()) == ["data", "manifest.json", "trace"]
    assert list(work_dirs.iterdir()) == []  # the local work directories are gone too
    again = cli(*args, "--output", memory_root, "--resume")
    assert again.exit_code == 0 and "already finished" in again.output


def test_input_and_output_on_s3_give_the_local_bytes(cli, tmp_path, corpus, s3):
    local = ("run", QUICKSTART, "--input", f"{corpus}/*.jsonl.gz", "--no-report", "-w", "2")
    assert cli(*local, "--output", tmp_path / "local").exit_code == 0
    on_store = input_on_store(["--input", f"{corpus}/*.jsonl.gz"], QUICKSTART, "s3://inp/demo")
    res = cli("run", QUICKSTART, *on_store, "--output", "s3://out/run/", "--no-report", "-w", "2")
    assert res.exit_code == 0, res.output
    assert store_digest("s3://out/run") == local_digest(tmp_path / "local")
    assert "_work/lock" not in store_names("s3://out/run")


def store_recipe(root: Path, name: str, output: str) -> Path:
    path = root / f"{name}.yaml"
    path.write_text(RECIPE.format(inp="s3://inp/resume/*.jsonl.gz", out=output))
    return path


@pytest.fixture(scope="module")
def resume_corpus(tmp_path_factory):
    """test_resume's input, and the bytes a local uninterrupted run makes of it."""
    root = tmp_path_factory.mktemp("resume-store")
    write_input(root / "in")
    ref = root / "ref.yaml"
    ref.write_text(RECIPE.format(inp=root / "in" / "*.jsonl.gz", out=root / "ref"))
    assert faultkit.start(ref).wait() == 0
    return root, local_digest(root / "ref")


_kills = itertools.count()


# Every phase would be 7 runs: a sample, drawn anew each time, beside the boundaries (the first
# and the last phase, inside a fit); bench/sections/faults.py kills at every failpoint.
@settings(max_examples=1, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(point=st.sampled_from(PHASES))
@example(point="task-done")
@example(point="fit")
@example(point="published-data")
def test_a_store_to_store_run_killed_at_a_failpoint_resumes_to_the_same_bytes(resume_corpus, s3, tmp_path, point):
    root, reference = resume_corpus
    input_on_store(["--input", f"{root}/in/*.jsonl.gz"], QUICKSTART, "s3://inp/resume")
    out = f"s3://out/{point.replace('@', '-')}-{next(_kills)}"
    path = store_recipe(tmp_path, "killed", out)
    proc = faultkit.start(path, failpoint=point)
    assert faultkit.wait_for_failpoint(proc), f"the run never reached {point}: {proc.stderr.read().decode()}"
    faultkit.kill(proc, whole_group=True)
    # killed: the prefix is no finished run (no manifest), but it is marked as curate's
    assert "manifest.json" not in store_names(out)
    assert finished_manifest(out, "any") is None
    assert is_run_directory(out, StoreFiles(out))
    resumed = faultkit.start(path, "--resume")
    assert resumed.wait() == 0, resumed.stderr.read().decode()
    assert store_digest(out) == reference
    assert store_names(out) == sorted(["manifest.json", "report.html", *reference])  # the resumed run's report too


def test_a_resume_on_another_machine_starts_over_and_gives_the_same_bytes(resume_corpus, s3, tmp_path, work_dirs):
    """The work directory is this machine's: where it is missing, --resume runs the whole run
    again into the same prefix (whose stale objects go first)."""
    root, reference = resume_corpus
    input_on_store(["--input", f"{root}/in/*.jsonl.gz"], QUICKSTART, "s3://inp/resume")
    path = store_recipe(tmp_path, "moved", "s3://out/moved")
    proc = faultkit.start(path, failpoint="published-data")
    assert faultkit.wait_for_failpoint(proc)
    faultkit.kill(proc, whole_group=True)
    [local] = work_dirs.iterdir()
    moved = tmp_path / "elsewhere"
    local.rename(moved)  # "another machine": no work directory for this output here
    resumed = faultkit.start(path, "--resume")
    assert resumed.wait() == 0, resumed.stderr.read().decode()
    assert store_digest("s3://out/moved") == reference


def test_a_run_that_lost_its_lease_publishes_no_manifest(cli, corpus, memory_root, monkeypatch):
    """Stalled past its lease, another run took the output over: it must not publish over it."""
    real = publish_module.failpoint

    def taken_over(name):
        if name == "published-data":
            StoreFiles(memory_root).write_bytes(f"{memory_root}/_work/lock", json.dumps(
                {"pid": 1, "host": "elsewhere", "token": "theirs", "until": 1e12}).encode())
        real(name)

    monkeypatch.setattr(publish_module, "failpoint", taken_over)
    res = cli("run", QUICKSTART, "--input", f"{corpus}/*.jsonl.gz", "--output", memory_root, "-w", "1")
    assert res.exit_code == 2
    assert "lost its lock" in res.output
    assert "manifest.json" not in store_names(memory_root)


def test_a_live_run_on_another_machine_is_refused(cli, corpus, s3):
    s3.put_object(Bucket="out", Key="busy/_work/lock",
                  Body=json.dumps({"pid": 4242, "host": "node-7", "token": "t", "until": 1e12}))
    res = cli("run", QUICKSTART, "--input", f"{corpus}/*.jsonl.gz", "--output", "s3://out/busy", "--resume")
    assert res.exit_code == 2
    assert "another curate run is writing here (pid 4242 on node-7" in res.output
    assert store_names("s3://out/busy") == ["_work/lock"]


def test_overwrite_replaces_only_a_prefix_curate_wrote_and_its_manifest_first(cli, corpus, s3, monkeypatch):
    args = ("run", QUICKSTART, "--input", f"{corpus}/*.jsonl.gz", "--no-report", "-w", "1")
    s3.put_object(Bucket="out", Key="theirs/notes.txt", Body=b"mine")
    refused = cli(*args, "--output", "s3://out/theirs", "--overwrite")
    assert refused.exit_code == 2 and "not a curate run directory" in refused.output
    assert store_names("s3://out/theirs") == ["notes.txt"]

    assert cli(*args, "--output", "s3://out/ours").exit_code == 0
    not_again = cli(*args, "--output", "s3://out/ours")
    assert not_again.exit_code == 2 and "--overwrite" in not_again.output
    removed = []
    real = StoreFiles.remove
    monkeypatch.setattr(StoreFiles, "remove", lambda self, path: (removed.append(path), real(self, path)))
    assert cli(*args, "--output", "s3://out/ours", "--overwrite").exit_code == 0
    published = [p for p in removed if p.rsplit("/", 1)[-1] in ("manifest.json", "data", "trace")]
    # a reader never finds the old manifest beside data half deleted
    assert published[:3] == ["s3://out/ours/manifest.json", "s3://out/ours/data", "s3://out/ours/trace"]


def test_a_prefix_holding_only_a_killed_runs_lock_is_curates(cli, corpus, memory_root):
    """Killed after taking its lease, before writing its fingerprints: --overwrite may replace it."""
    StoreFiles(memory_root).write_bytes(f"{memory_root}/_work/lock", json.dumps(
        {"pid": 1, "host": "elsewhere", "token": "t", "until": 0}).encode())
    res = cli("run", QUICKSTART, "--input", f"{corpus}/*.jsonl.gz", "--output", memory_root, "--overwrite",
              "-w", "1", "--no-report")
    assert res.exit_code == 0, res.output


def test_a_missing_bucket_is_exit_2_naming_the_output(cli, corpus, s3, work_dirs):
    res = cli("run", QUICKSTART, "--input", f"{corpus}/*.jsonl.gz", "--output", "s3://no-such-bucket/x")
    assert res.exit_code == 2
    assert "output s3://no-such-bucket/x" in res.output and "Traceback" not in res.output
    assert list(work_dirs.iterdir()) == []  # nothing left behind


def test_an_output_store_without_credentials_is_exit_2_naming_the_output(cli, corpus, s3, s3_server, work_dirs,
                                                                        tmp_path, monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))  # nor a profile to fall
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))                  # back on, nor a role
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    res = cli("run", QUICKSTART, "--input", f"{corpus}/*.jsonl.gz", "--output", "s3://out/x")
    assert res.exit_code == 2, res.output
    assert "output s3://out/x: cannot write there: NoCredentialsError" in res.output
    assert not list(work_dirs.glob("*"))  # nothing left behind


@pytest.mark.parametrize("output, options, message", [
    ("nosuchscheme://bucket/x", [], "output.path: nosuchscheme://bucket/x: cannot open this URI"),
    ("memory://x", ["--set", "output.storage_options={retries: {attempts: 0}}"],
     "output.storage_options.retries: attempts must be at least 1"),
])
def test_an_output_uri_that_cannot_be_opened_is_refused_before_the_run(cli, corpus, output, options, message):
    res = cli("run", QUICKSTART, "--input", f"{corpus}/*.jsonl.gz", "--output", output, *options)
    assert res.exit_code == 2
    assert message in res.output


def test_upload_is_for_a_local_run(cli, corpus, memory_root):
    res = cli("run", QUICKSTART, "--input", f"{corpus}/*.jsonl.gz", "--output", memory_root,
              "--set", f"output.upload={memory_root}-copy")
    assert res.exit_code == 2
    assert "output.upload copies a local run elsewhere" in res.output


def test_the_work_directory_is_keyed_by_the_output_uri(work_dirs):
    a, b = RunLayout.at("s3://b/run-a"), RunLayout.at("s3://b/run-a/")
    assert a == b and a.remote and a.root == "s3://b/run-a"
    assert a.work.startswith(str(work_dirs)) and a.work != RunLayout.at("s3://b/run-b").work
    assert a.manifest == "s3://b/run-a/manifest.json" and a.lease == "s3://b/run-a/_work/lock"
    local = RunLayout.at("out/x")
    assert not local.remote and local.work == f"{local.root}/_work"


def test_a_store_failing_while_publishing_is_exit_2_and_resume_finishes(cli, tmp_path, corpus, memory_root,
                                                                        monkeypatch):
    args = ("run", QUICKSTART, "--input", f"{corpus}/*.jsonl.gz", "--no-report", "-w", "1")
    real = StoreFiles.upload

    def reset(self, pairs):
        raise ConnectionResetError("connection reset by peer")

    monkeypatch.setattr(StoreFiles, "upload", reset)
    failed = cli(*args, "--output", memory_root)
    assert failed.exit_code == 2
    assert f"output {memory_root}: cannot write there: ConnectionResetError" in failed.output
    assert "--resume" in failed.output and "manifest.json" not in store_names(memory_root)
    monkeypatch.setattr(StoreFiles, "upload", real)
    assert cli(*args, "--output", tmp_path / "local").exit_code == 0
    assert cli(*args, "--output", memory_root, "--resume").exit_code == 0
    assert store_digest(memory_root) == local_digest(tmp_path / "local")


def test_a_run_failing_before_it_produced_anything_leaves_nothing_on_the_store(cli, corpus, memory_root, work_dirs,
                                                                               monkeypatch):
    def fails(ctx, task, progress=None):
        raise InputError(f"{task.name}: unreadable")

    monkeypatch.setattr(local_engine, "run_task", fails)  # the first task fails, in the run
    res = cli("run", QUICKSTART, "--input", f"{corpus}/*.jsonl.gz", "--output", memory_root, "-w", "1")
    assert res.exit_code == 2 and "unreadable" in res.output
    assert store_names(memory_root) == []  # neither its mark nor its lock
    assert list(work_dirs.iterdir()) == []


def test_uploads_hold_a_few_files_in_memory_at_once_not_every_shard(s3, tmp_path, monkeypatch):
    """s3fs reads a file of under 100 MB whole for its PUT; all of a run's shards at once were
    +1 GB in the run process at 1M documents."""
    from curate.engine.rundir import store_files

    files = StoreFiles("s3://out/run")
    pairs = []
    for i in range(3 * store_files.UPLOAD_FILES_AT_ONCE):
        (tmp_path / f"{i}.bin").write_bytes(b"x" * 1000)
        pairs.append((str(tmp_path / f"{i}.bin"), f"s3://out/run/data/{i}.bin"))
    flying, most = 0, 0
    real = type(files.fs)._put_file

    async def counted(self, *args, **kwargs):
        nonlocal flying, most
        flying += 1
        most = max(most, flying)
        try:
            return await real(self, *args, **kwargs)
        finally:
            flying -= 1

    monkeypatch.setattr(type(files.fs), "_put_file", counted)
    files.upload(pairs)
    assert 1 < most <= store_files.UPLOAD_FILES_AT_ONCE
    assert sorted(files.fs.ls("s3://out/run/data", refresh=True)) == sorted(r.removeprefix("s3://") for _, r in pairs)


def test_an_upload_holds_a_part_of_a_large_file_in_memory_not_the_whole_file(s3, tmp_path):
    """s3fs reads a file under two of its 50 MB parts whole for one PUT: workers putting their
    work files on the store held up to 100 MB more than ones writing to local disk. Files larger
    than two UPLOAD_PARTs go in parts (a multipart object's ETag ends in -<parts>), publishing
    (StoreFiles.upload) and a task's work files (WorkStore.put) alike, with the same bytes."""
    from curate.engine.work.work_store import WorkStore
    from curate.io.store import UPLOAD_PART

    big = tmp_path / "work" / "big.bin"
    big.parent.mkdir()
    big.write_bytes(bytes(range(256)) * (UPLOAD_PART * 5 // 2 // 256))
    StoreFiles("s3://out/run").upload([(str(big), "s3://out/run/data/big.bin")])
    WorkStore("s3://out/work", tmp_path / "work").put(big)
    for key in ("run/data/big.bin", "work/big.bin"):
        got = s3.get_object(Bucket="out", Key=key)
        assert got["ETag"].strip('"').endswith("-3")
        assert got["Body"].read() == big.read_bytes()


def test_upload_parts_grow_only_where_a_file_would_need_more_than_the_most_parts_s3_takes():
    from curate.io.store import MAX_PARTS, UPLOAD_PART, upload_options

    s3fs = pytest.importorskip("s3fs")
    fs = s3fs.S3FileSystem(anon=True)
    assert upload_options(fs, [1, 3 * UPLOAD_PART]) == {"chunksize": UPLOAD_PART}
    huge = 200 << 30
    part = upload_options(fs, [1, huge])["chunksize"]
    assert UPLOAD_PART < part and -(-huge // part) <= MAX_PARTS
    assert upload_options(fsspec.filesystem("memory"), [huge]) == {}
