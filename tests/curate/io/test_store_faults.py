"""Faults of real stores: a run reading s3:// through a proxy that fails 10% of the requests (503
SlowDown, connection resets, bodies cut off halfway) gives the bytes of a local run and counts its
retries in the manifest; the retry policy is bounded, jittered, configurable and never retries a
failure that would fail again."""

import io

import pyarrow as pa
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from curate import demo, recipe
from curate.engine.run.runner import RunOptions, run
from curate.errors import InputError
from curate.io import retries
from curate.io.sources import discover
from tests.curate.engine.faultkit import digest
from tests.curate.io.faultproxy import FaultProxy
from tests.curate.io.test_remote_inputs import QUICKSTART, hive_parquet, s3, s3_server, upload  # noqa: F401

HIVE_STEPS = "steps:\n  - sql_filter: {where: \"lang = 'de' OR n % 3 = 0\"}\n  - exact_dedup: {}\n"


def test_a_run_through_a_faulty_store_gives_the_local_bytes_and_counts_its_retries(tmp_path, s3, s3_server):
    demo.generate(tmp_path / "demo", docs=2400, files=24)
    hive_parquet(tmp_path / "hive")
    upload(s3, tmp_path / "demo", "demo")
    upload(s3, tmp_path / "hive", "hive")
    retries.take_untallied()  # what earlier tests of this process left uncounted is not this run's
    with FaultProxy(s3_server, rate=0.1, seed=0) as proxy:
        # the JSONL run's tasks on worker processes (their counts come back in their results), the
        # Parquet run's here (its counts are its tasks', not the listing's too)
        for local, uri, steps, workers in ((f"{tmp_path}/demo/*.jsonl.gz", "s3://inp/demo/*.jsonl.gz", QUICKSTART, 2),
                                           (str(tmp_path / "hive"), "s3://inp/hive", HIVE_STEPS, 1)):
            before = dict(proxy.faults)
            outs, manifests = [], []
            for where, path, options in (("local", local, []),
                                         ("s3", uri, [f"input.storage_options={{endpoint_url: '{proxy.url}'}}"])):
                outs.append(tmp_path / f"{where}-{uri.split('/')[3]}")
                r = recipe.load(text=steps, input_path=path, output_path=str(outs[-1]), overrides=options)
                manifests.append(run(r, RunOptions(workers=workers)))
            assert digest(outs[1]) == digest(outs[0]) and digest(outs[0])
            faults = {k: proxy.faults[k] - before[k] for k in proxy.faults}
            store = manifests[1].store
            # each 503 and each cut body counted once; a reset before any answer aiohttp first retries unseen
            throttled = sum(n for reason, n in store["retry_reasons"].items() if reason.startswith("503"))
            assert faults["503"] and throttled == faults["503"], (faults, store)
            assert store["retries"] == sum(store["retry_reasons"].values()) >= faults["503"] + faults["cut"], store
            assert manifests[0].store is None  # a local run has no store to count
    assert all(proxy.faults.values()), proxy.faults  # every kind of fault was met


def test_a_store_failing_every_time_is_tried_the_set_number_of_times_then_named(s3, s3_server):
    s3.put_object(Bucket="inp", Key="a/x.jsonl", Body=b'{"text": "a"}\n')
    # 503s alone: aiohttp itself tries a request reset before any answer once more, unseen
    with FaultProxy(s3_server, rate=1.0, max_in_a_row=10 ** 6, kinds=("503",)) as proxy:
        options = {"endpoint_url": proxy.url, "retries": {"attempts": 3, "backoff_s": 0}}
        with pytest.raises(InputError, match=r"s3://inp/a/x\.jsonl"):
            discover("s3://inp/a/x.jsonl", storage_options=options)
    assert proxy.requests and proxy.requests % 3 == 0, proxy.requests  # each request 3 times, none more


def test_bodies_cut_off_are_read_again_and_each_counted(s3, s3_server, monkeypatch):
    import gzip
    import os

    from curate.io import store
    from curate.io.readers import read_source

    texts = [os.urandom(300).hex() for _ in range(3000)]
    s3.put_object(Bucket="inp", Key="cut/a.jsonl.gz", Body=gzip.compress(
        "".join(f'{{"text": "{t}"}}\n' for t in texts).encode(), mtime=0))
    from isal import igzip

    monkeypatch.setattr(store, "STREAM_BLOCK", 32 << 10)  # many range requests, read here ...
    monkeypatch.setattr(igzip, "READ_BUFFER_SIZE", 32 << 10)  # ... as ISA-L asks for no more at once
    with FaultProxy(s3_server, rate=0.3, kinds=("cut",)) as proxy, retries.tally() as counted:
        options = {"endpoint_url": proxy.url, "retries": {"backoff_s": 0.01}}
        [source] = discover("s3://inp/cut/a.jsonl.gz", storage_options=options)
        assert [t for b, _ in read_source(source) if b is not None for t in b.column("text").to_pylist()] == texts
    assert proxy.faults["cut"] > 5 and sum(counted.values()) == proxy.faults["cut"] + proxy.faults["503"], \
        (counted, proxy.faults)


class _Flaky(io.BytesIO):
    """A file whose reads fail `failures` times (raising `error`) before they answer."""

    def __init__(self, data: bytes, failures: int, error: BaseException):
        super().__init__(data)
        self.failures, self.error, self.reads = failures, error, 0

    def read(self, size=-1):
        self.reads += 1
        if self.failures:
            self.failures -= 1
            super().read(1)  # a broken read may have moved the position
            raise self.error
        return super().read(size)


def test_a_read_that_breaks_off_is_read_again_from_where_it_started_and_counted():
    policy = retries.Policy(attempts=4, backoff_s=0)
    handle = _Flaky(b"0123456789", failures=2, error=ConnectionResetError("reset by peer"))
    handle.seek(3)
    with retries.tally() as counted:
        assert retries.RetryingFile(handle, policy).read(4) == b"3456"
    assert counted == {"ConnectionResetError": 2} and handle.reads == 3


def test_a_read_into_a_buffer_is_retried_as_a_read():
    handle = _Flaky(b"0123456789", failures=1, error=ConnectionResetError("reset by peer"))
    handle.seek(2)
    buffer = bytearray(5)
    with retries.tally() as counted:
        assert retries.RetryingFile(handle, retries.Policy(backoff_s=0)).readinto(buffer) == 5
    assert buffer == b"23456" and counted == {"ConnectionResetError": 1}


def test_a_read_failing_every_time_stops_after_the_attempts_and_other_errors_at_once():
    policy = retries.Policy(attempts=3, backoff_s=0)
    always = _Flaky(b"x", failures=100, error=TimeoutError("timed out"))
    with retries.tally() as counted, pytest.raises(TimeoutError):
        retries.RetryingFile(always, policy).read()
    assert always.reads == 3 and counted == {"TimeoutError": 2}
    missing = _Flaky(b"x", failures=100, error=FileNotFoundError("gone"))
    with pytest.raises(FileNotFoundError):
        retries.RetryingFile(missing, policy).read()
    assert missing.reads == 1  # a missing object is missing next time too


def test_a_tally_counts_while_open_only_and_what_is_outside_goes_to_the_process():
    retries.take_untallied()
    with retries.tally() as task:
        with retries.tally() as inner:  # equal to `task` (both empty) yet another
            pass
        retries.count("503 SlowDown")
    retries.count("ConnectionClosedError")
    assert task == {"503 SlowDown": 1} and inner == {}
    assert retries.take_untallied() == {"ConnectionClosedError": 1} and retries.take_untallied() == {}


def test_an_http_answer_is_retried_by_its_status():
    aiohttp = pytest.importorskip("aiohttp")

    def answer(status: int):
        return aiohttp.ClientResponseError(None, (), status=status)

    assert [retries.failure(answer(s)) for s in (503, 429, 500, 404, 403)] == ["503", "429", "500", None, None]


@given(attempt=st.integers(1, 80), base=st.floats(0, 10), cap=st.floats(0, 100))
@example(attempt=1, base=0.2, cap=20.0)
@example(attempt=80, base=0.2, cap=20.0)  # 2^79 times the base: the cap holds
@example(attempt=3, base=0.0, cap=20.0)
def test_the_wait_is_jittered_below_the_exponential_and_the_cap(attempt, base, cap):
    delay = retries.Policy(backoff_s=base, max_backoff_s=cap).delay(attempt)
    assert 0 <= delay <= min(cap, base * 2 ** (attempt - 1))


def test_the_policy_is_set_in_storage_options_and_checked():
    assert retries.Policy.of({"retries": {"attempts": 2, "backoff_s": 1}}) == retries.Policy(2, 1.0)
    assert retries.Policy.of({"endpoint_url": "x"}) == retries.Policy()
    for bad in ({"attempts": 0}, {"atempts": 3}, {"attempts": "many"}, 5, {"backoff_s": -1}):
        with pytest.raises(InputError, match=r"input\.storage_options\.retries"):
            retries.Policy.of({"retries": bad})
    pytest.importorskip("s3fs")
    with pytest.raises(InputError, match=r"config_kwargs\.retries: curate retries"):
        discover("s3://inp/x.jsonl", storage_options={"config_kwargs": {"retries": {"max_attempts": 2}}})


def test_no_credential_reaches_any_file_of_the_run_nor_its_output(cli, tmp_path, s3, s3_server, monkeypatch):
    import fsspec
    import pyarrow.parquet as pq

    secrets = ("the-secret-from-env", "literal-key-in-recipe", "the-token-in-recipe", "the-output-secret-from-env",
               "literal-output-key")
    rows = b"".join(b'{"text": "document %d with words enough"}\n{"text": "bad\n' % i for i in range(50))
    s3.put_object(Bucket="inp", Key="c/a.jsonl", Body=rows)  # bad lines: the read step's trace has rows
    s3.create_bucket(Bucket="secrets-out")
    monkeypatch.setenv("MY_SECRET", secrets[0])
    monkeypatch.setenv("OUT_SECRET", secrets[3])
    monkeypatch.setenv("CURATE_CACHE_DIR", str(tmp_path / "cache"))
    r = tmp_path / "r.yaml"
    r.write_text(f"input:\n  path: s3://inp/c/a.jsonl\n  storage_options:\n    endpoint_url: {s3_server}\n"
                 f"    secret: ${{MY_SECRET}}\n    key: {secrets[1]}\n    token: {secrets[2]}\n"
                 f"output:\n  path: s3://secrets-out/o\n  storage_options:\n    endpoint_url: {s3_server}\n"
                 f"    secret: ${{OUT_SECRET}}\n    key: {secrets[4]}\n"
                 f"steps:\n  - exact_dedup: {{}}\n")
    monkeypatch.setenv("CURATE_PROGRESS_SECONDS", "0.1")  # the batch log's lines too
    res = cli("run", r, "-w", "2", "--keep-work")
    assert res.exit_code == 0, res.output
    fs = fsspec.filesystem("s3")
    fs.invalidate_cache()
    published = fs.find("secrets-out/o")
    assert "secrets-out/o/report.html" in published and any("/trace/" in p for p in published)
    said = [res.output, res.stderr]
    local = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]  # the kept work directory
    assert local
    for name, data in [(p, fs.cat_file(p)) for p in published] + [(str(p), p.read_bytes()) for p in local]:
        said.append(str(pq.read_table(pa.BufferReader(data)).to_pylist()) if name.endswith(".parquet")
                    else data.decode("latin-1"))
    assert not [(s, text[:200]) for s in secrets for text in said if s in text]
    for obj in s3.list_objects_v2(Bucket="secrets-out").get("Contents", []):
        s3.delete_object(Bucket="secrets-out", Key=obj["Key"])
    s3.delete_bucket(Bucket="secrets-out")


def test_a_profile_that_is_not_there_is_an_input_error_naming_the_uri():
    pytest.importorskip("s3fs")
    with pytest.raises(InputError, match=r"s3://inp/x\.jsonl: cannot connect: ProfileNotFound"):
        discover("s3://inp/x.jsonl", storage_options={"profile": "no-such-profile-here"})


def test_aws_endpoint_url_selects_an_s3_compatible_endpoint(s3, s3_server, monkeypatch):
    import fsspec.config

    s3.put_object(Bucket="inp", Key="e/a.jsonl", Body=b'{"text": "a"}\n')
    monkeypatch.delenv("FSSPEC_S3_ENDPOINT_URL")
    monkeypatch.setitem(fsspec.config.conf, "s3", {})  # nothing but the AWS variable names the server
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server)
    [source] = discover("s3://inp/e/a.jsonl", storage_options={"skip_instance_cache": True})
    assert source.size == 14
