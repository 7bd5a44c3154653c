"""output.storage_options: the output store reached with what the options alone carry (moto checking
credentials, none in the environment), a wrong credential refused before any worker starts naming
the output, the store's faults retried by the options' policy and counted in the manifest apart from
the input's; and report.html of a run on a store, uploaded before its manifest, the page
`curate report` makes of the same files."""

import re
import uuid
from pathlib import Path

import fsspec
import pytest

from curate import demo, recipe
from curate.engine.local import engine as local_engine
from curate.engine.run.runner import RunOptions, run
from curate.engine.rundir.store_files import StoreFiles
from curate.io import retries
from curate.report import report as report_module
from tests.curate.io.faultproxy import FaultProxy
from tests.curate.io.test_remote_inputs import s3, s3_server  # noqa: F401 (fixtures)
from tests.curate.io.storekit import local_digest, store_digest, store_names

REPO = Path(__file__).resolve().parents[3]
QUICKSTART = REPO / "recipes" / "quickstart.yaml"
ALLOW_ALL = '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}'


@pytest.fixture(autouse=True)
def work_dirs(tmp_path, monkeypatch):
    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "runs"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo")
    demo.generate(root, docs=400, files=2)
    return root


@pytest.fixture(scope="module")
def reference(corpus, tmp_path_factory):
    """The quickstart's local run of the corpus: its directory."""
    out = tmp_path_factory.mktemp("ref") / "run"
    run(recipe.load(QUICKSTART, input_path=f"{corpus}/*.jsonl.gz", output_path=str(out)), RunOptions(workers=1))
    return out


@pytest.fixture
def locked_store(monkeypatch, s3_server):
    """moto checking every request's signature against an IAM user's key, made here; the
    environment holding no credential and no endpoint. The key's id and secret."""
    import boto3
    import fsspec.config
    from moto import settings

    admin = dict(endpoint_url=s3_server, aws_access_key_id="setup", aws_secret_access_key="setup",
                 region_name="us-east-1")
    iam = boto3.client("iam", **admin)
    user = f"curate-{uuid.uuid4().hex[:8]}"
    iam.create_user(UserName=user)
    iam.put_user_policy(UserName=user, PolicyName="all", PolicyDocument=ALLOW_ALL)
    key = iam.create_access_key(UserName=user)["AccessKey"]
    client = boto3.client("s3", **{**admin, "aws_access_key_id": key["AccessKeyId"],
                                   "aws_secret_access_key": key["SecretAccessKey"]})
    monkeypatch.setattr(settings, "INITIAL_NO_AUTH_ACTION_COUNT", 0)  # from here, moto checks credentials
    client.create_bucket(Bucket="locked")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                 "AWS_ENDPOINT_URL", "FSSPEC_S3_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setitem(fsspec.config.conf, "s3", {})
    yield key["AccessKeyId"], key["SecretAccessKey"]
    for obj in client.list_objects_v2(Bucket="locked").get("Contents", []):
        client.delete_object(Bucket="locked", Key=obj["Key"])
    client.delete_bucket(Bucket="locked")


def _options_recipe(tmp_path: Path, corpus: Path, output: str, options: str) -> Path:
    r = tmp_path / "r.yaml"
    r.write_text(QUICKSTART.read_text().replace("path: data/demo/*.jsonl.gz", f"path: {corpus}/*.jsonl.gz")
                 .replace("output:\n", f"output:\n  storage_options: {options}\n").replace(
                     "path: out/quickstart", f"path: {output}"))
    assert "storage_options" in r.read_text() and output in r.read_text()
    return r


def _fs(endpoint: str, key: str, secret: str):
    return fsspec.filesystem("s3", endpoint_url=endpoint, key=key, secret=secret, skip_instance_cache=True)


def test_the_output_store_is_reached_with_the_credentials_the_options_carry(cli, tmp_path, corpus, reference,
                                                                           locked_store, s3_server, monkeypatch):
    key, secret = locked_store
    monkeypatch.setenv("OUT_KEY_ID", key)
    monkeypatch.setenv("S3_AT", s3_server)
    # the key's id as a reference, the secret written in the recipe itself (the manifest masks it)
    r = _options_recipe(tmp_path, corpus, "s3://locked/run",
                        f"{{endpoint_url: '${{S3_AT}}', key: '${{OUT_KEY_ID}}', secret: '{secret}'}}")
    res = cli("run", r, "-w", "2", "--no-report")
    assert res.exit_code == 0, res.output
    fs = _fs(s3_server, key, secret)
    found = {p.removeprefix("locked/run/"): fs.cat_file(p) for p in fs.find("locked/run")}
    assert sorted(found) == sorted(["manifest.json", *local_digest(reference)])
    import hashlib

    assert {k: hashlib.sha256(v).hexdigest() for k, v in found.items() if k != "manifest.json"} == \
        local_digest(reference)
    from curate.manifest import read

    manifest = read(found["manifest.json"], "s3://locked/run/manifest.json")
    assert manifest.recipe["output"]["storage_options"] == {"endpoint_url": "${S3_AT}", "key": "${OUT_KEY_ID}",
                                                             "secret": "***"}
    assert manifest.store == {"output_retries": 0, "output_retry_reasons": {}}  # no input on a store
    assert not [name for name, data in found.items() if secret.encode() in data]
    assert secret not in res.output


def test_a_wrong_credential_is_exit_2_naming_the_output_before_any_worker_starts(cli, tmp_path, corpus, locked_store,
                                                                                 s3_server, work_dirs, monkeypatch):
    key, _ = locked_store

    def no_task(*args, **kwargs):
        raise AssertionError("a task ran")

    monkeypatch.setattr(local_engine, "run_task", no_task)
    r = _options_recipe(tmp_path, corpus, "s3://locked/refused",
                        f"{{endpoint_url: '{s3_server}', key: '{key}', secret: not-the-secret}}")
    res = cli("run", r, "-w", "1")
    assert res.exit_code == 2, res.output
    assert "output s3://locked/refused: access refused" in res.output and "output.storage_options" in res.output
    assert "not-the-secret" not in res.output and "Traceback" not in res.output
    assert not work_dirs.exists() or list(work_dirs.iterdir()) == []  # nothing left behind


def test_output_upload_takes_the_options_too(cli, tmp_path, corpus, locked_store, s3_server):
    key, secret = locked_store
    r = _options_recipe(tmp_path, corpus, str(tmp_path / "local"),
                        f"{{endpoint_url: '{s3_server}', key: '{key}', secret: '{secret}'}}")
    res = cli("run", r, "-w", "1", "--no-report", "--set", "output.upload=s3://locked/copy")
    assert res.exit_code == 0, res.output
    fs = _fs(s3_server, key, secret)
    assert fs.cat_file("locked/copy/manifest.json") == (tmp_path / "local" / "manifest.json").read_bytes()


def test_output_faults_are_retried_by_the_options_policy_and_counted_as_the_outputs(tmp_path, corpus, reference, s3,
                                                                                   s3_server):
    retries.take_output()
    # the output's reads (its lease) meet bodies cut off too
    with FaultProxy(s3_server, rate=0.3, seed=0) as proxy:
        options = [f"output.storage_options={{endpoint_url: '{proxy.url}', retries: {{backoff_s: 0.01}}}}"]
        r = recipe.load(QUICKSTART, input_path=f"{corpus}/*.jsonl.gz", output_path="s3://inp/faulty-run",
                        overrides=options)
        manifest = run(r, RunOptions(workers=2))
        after = retries.take_output()  # the lease's release and the mark's removal, after the manifest
    assert store_digest("s3://inp/faulty-run") == local_digest(reference)
    store = manifest.store
    assert "retries" not in store  # the input is local: nothing of it was retried
    assert store["output_retries"] == sum(store["output_retry_reasons"].values()) > 0, (store, after, proxy.faults)
    throttled = sum(n for reason, n in [*store["output_retry_reasons"].items(), *after.items()]
                    if reason.startswith("503"))
    assert proxy.faults["503"] and throttled == proxy.faults["503"], (store, after, proxy.faults)
    from curate.manifest import read

    written = read(fsspec.filesystem("s3").cat_file("inp/faulty-run/manifest.json"), "faulty-run/manifest.json")
    assert written.store == store


def test_a_run_on_a_store_gets_the_report_of_its_files_before_its_manifest(cli, tmp_path, corpus, monkeypatch):
    root = f"memory://report-{uuid.uuid4().hex}"
    order = []
    real_upload, real_write = StoreFiles.upload, StoreFiles.write_bytes
    monkeypatch.setattr(StoreFiles, "upload", lambda self, pairs: (order.extend(r for _, r in pairs),
                                                                   real_upload(self, pairs)))
    monkeypatch.setattr(StoreFiles, "write_bytes", lambda self, path, data: (order.append(path),
                                                                             real_write(self, path, data)))
    res = cli("run", QUICKSTART, "--input", f"{corpus}/*.jsonl.gz", "--output", root, "-w", "1")
    assert res.exit_code == 0, res.output
    assert f"report: {root}/report.html" in res.output
    published = [p for p in order if not p.startswith(f"{root}/_work/")]
    assert published[-2:] == [f"{root}/report.html", f"{root}/manifest.json"]
    # the page `curate report` writes of the same files, copied to a local directory
    fs = fsspec.filesystem("memory")
    copy = tmp_path / "copy"
    for path in fs.find(root):
        target = copy / path.split(root.removeprefix("memory://") + "/", 1)[1]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(fs.cat_file(path))
    uploaded = (copy / "report.html").read_text()
    report_module.write_report(copy)
    written = re.compile(r"report written</td><td[^>]*>[^<]*")
    assert written.search(uploaded)
    assert written.sub("", uploaded) == written.sub("", (copy / "report.html").read_text())
    assert "plotly" in uploaded and "Removal reasons" in uploaded
    fs.rm(root, recursive=True)


def test_a_report_that_cannot_be_written_is_a_warning_and_the_run_publishes(cli, corpus, monkeypatch):
    root = f"memory://noreport-{uuid.uuid4().hex}"

    def broken(*args):
        raise ValueError("no plot today")

    monkeypatch.setattr(report_module, "write_staged", broken)
    res = cli("run", QUICKSTART, "--input", f"{corpus}/*.jsonl.gz", "--output", root, "-w", "1")
    assert res.exit_code == 0, res.output
    assert "warning: report.html not written (ValueError: no plot today)" in res.output
    assert "report.html" not in store_names(root) and "manifest.json" in store_names(root)
    fsspec.filesystem("memory").rm(root, recursive=True)


def test_the_outputs_s3_client_is_its_own_so_its_retries_count_as_the_outputs():
    """fsspec caches a filesystem per options: an input and an output on one store with the same
    options would share a client, whose retry hook (the last one set) counts for one side only."""
    pytest.importorskip("s3fs")
    from curate.io.store import filesystem

    options = {"endpoint_url": "http://127.0.0.1:9", "key": "k", "secret": "s"}
    read, _ = filesystem("s3://bucket/in", options)
    written, _ = filesystem("s3://bucket/out", options, side="output")
    assert written.s3 is not read.s3
    assert filesystem("s3://bucket/in2", options)[0] is read  # inputs still share theirs


def test_an_output_object_whose_body_breaks_off_is_read_again_and_counted(monkeypatch):
    """The lease is read whole (cat_file): a body cut off mid-read is past the client's retry hook."""
    files = StoreFiles(f"memory://lease-{uuid.uuid4().hex}", {"retries": {"attempts": 3, "backoff_s": 0}})
    files.write_bytes(f"{files.fs.root_marker}x/lock", b"held")
    real, failures = files.fs.cat_file, [ConnectionResetError("reset by peer")] * 2

    def flaky(path):
        if failures:
            raise failures.pop()
        return real(path)

    monkeypatch.setattr(files.fs, "cat_file", flaky)
    retries.take_output()
    assert files.read_bytes(f"{files.fs.root_marker}x/lock") == b"held"
    assert retries.take_output() == {"ConnectionResetError": 2}
    failures[:] = [FileNotFoundError("gone")]
    with pytest.raises(FileNotFoundError):  # a missing object is missing next time too
        files.read_bytes(f"{files.fs.root_marker}x/lock")
    assert retries.take_output() == {}
