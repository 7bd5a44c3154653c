"""pyarrow's S3 client for inputs (curate/io/native_s3.py): which storage_options it is told and
which leave the read to s3fs, the reasons its failures are retried under, and its reads: the
same bytes whatever the sizes asked for, a stream's blocks fetched one ahead."""

import os

import boto3
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from curate.io import native_s3, retries
from tests.curate.io.faultproxy import FaultProxy
from tests.curate.io.motokit import s3_server  # noqa: F401 (a fixture)

BODY = os.urandom(200_000)


@pytest.fixture(scope="module")
def bucket(s3_server):
    """A bucket holding one object (`BODY` at s3://native/o.bin); options that reach it."""
    client = boto3.client("s3", endpoint_url=s3_server, aws_access_key_id="test", aws_secret_access_key="test",
                          region_name="us-east-1")
    client.create_bucket(Bucket="native")
    client.put_object(Bucket="native", Key="o.bin", Body=BODY)
    etag = client.head_object(Bucket="native", Key="o.bin")["ETag"]
    yield {"endpoint_url": s3_server, "key": "test", "secret": "test"}, etag


@pytest.fixture
def no_s3_config(monkeypatch):
    """Nothing from fsspec's config or the AWS variables names an endpoint or a region."""
    import fsspec.config

    monkeypatch.setitem(fsspec.config.conf, "s3", {})
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)


def test_options_pyarrow_can_be_told_are_mapped_and_any_other_leaves_the_read_to_s3fs(no_s3_config, monkeypatch):
    endpoint = "http://127.0.0.1:9"
    for options in ({"endpoint_url": endpoint}, {"client_kwargs": {"endpoint_url": endpoint}},
                    {"endpoint_url": endpoint, "key": "k", "secret": "s", "token": "t", "retries": {"attempts": 2}},
                    {"client_kwargs": {"region_name": "eu-west-1"}}, {"endpoint_url": endpoint, "anon": True}):
        found = native_s3.client("s3://b/k/o.parquet", options)
        assert found is not None and found[1] == "b/k/o.parquet", options
    assert native_s3.client("s3://b/o.parquet", {"endpoint_url": endpoint})[0].region == "us-east-1"
    for options in ({"endpoint_url": endpoint, "profile": "p"}, {"endpoint_url": endpoint, "config_kwargs": {}},
                    {"client_kwargs": {"endpoint_url": endpoint, "verify": False}}, {"requester_pays": True},
                    {}):  # AWS itself with no region known: s3fs finds the bucket's
        assert native_s3.client("s3://b/o.parquet", options) is None, options
    assert native_s3.client("gs://b/o.parquet", {"endpoint_url": endpoint}) is None


def test_the_endpoint_comes_from_fsspec_config_or_the_aws_variables_as_s3fs_takes_it(no_s3_config, monkeypatch):
    import fsspec.config

    monkeypatch.setitem(fsspec.config.conf, "s3", {"endpoint_url": "http://127.0.0.1:9"})  # FSSPEC_S3_ENDPOINT_URL
    assert native_s3.client("s3://b/o", None) is not None
    monkeypatch.setitem(fsspec.config.conf, "s3", {"endpoint_url": "http://127.0.0.1:9", "use_ssl": False})
    assert native_s3.client("s3://b/o", None) is None  # a config key it cannot be told
    monkeypatch.setitem(fsspec.config.conf, "s3", {})
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-central-1")
    fs, _ = native_s3.client("s3://b/o", None)
    assert fs.region == "eu-central-1"


@pytest.mark.parametrize("message, reason", [
    ("AWS Error SLOW_DOWN during GetObject operation: Please reduce your request rate.", "503 SlowDown"),
    ("When reading information for key 'k' in bucket 'b': AWS Error UNKNOWN (HTTP status 503) during HeadObject "
     "operation: No response body.", "503"),
    ("AWS Error NETWORK_CONNECTION during GetObject operation: curlCode: 18, Transferred a partial file",
     "NETWORK_CONNECTION"),
    ("AWS Error UNKNOWN (HTTP status 500) during GetObject operation", "500"),
    ("AWS Error ACCESS_DENIED during GetObject operation: Access Denied", None),
    ("AWS Error UNKNOWN (HTTP status 403) during HeadObject operation: No response body.", None),
    ("AWS Error NO_SUCH_KEY during GetObject operation", None),
])
def test_pyarrows_failures_are_retried_by_what_their_message_says(message, reason):
    assert retries.failure(OSError(message)) == reason


def test_a_failing_request_is_tried_again_and_counted(bucket, s3_server):
    options, etag = bucket
    with FaultProxy(s3_server, rate=0.5, seed=3, kinds=("503", "cut")) as proxy, retries.tally() as counted:
        fs, path = native_s3.client("s3://native/o.bin", {**options, "endpoint_url": proxy.url})
        policy = retries.Policy(backoff_s=0)
        with native_s3.NativeObject(fs, path, "s3://native/o.bin", etag, policy, block=7_000) as stream:
            assert bytes(stream.read(7_000)) == BODY[:7_000]
            assert b"".join(bytes(stream.read(3_000)) for _ in range(200)) == BODY[7_000:]
    assert sum(proxy.faults.values()) > 3 and sum(counted.values()) == sum(proxy.faults.values()), (counted, proxy.faults)


# Blocks of under 1 KB are left to the examples: each drawn one cost thousands of GETs of moto.
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(block=st.one_of(st.just(0), st.integers(1_000, 70_000)),
       sizes=st.lists(st.integers(-1, 90_000), min_size=1, max_size=12),
       start=st.integers(0, len(BODY)))
@example(block=0, sizes=[-1], start=0)  # a random-access read of all of it
@example(block=100_000, sizes=[100_000, 100_000, 1], start=0)  # reads ending exactly on the blocks
@example(block=1, sizes=[5], start=len(BODY) - 2)  # past the end: what is left, then nothing
def test_reads_give_the_objects_bytes_whatever_the_sizes_and_blocks(bucket, block, sizes, start):
    options, etag = bucket
    fs, path = native_s3.client("s3://native/o.bin", options)
    with native_s3.NativeObject(fs, path, "s3://native/o.bin", etag, retries.Policy(), block) as f:
        assert f.seek(start) == start
        at = start
        for size in sizes:
            got = bytes(f.read(size))
            want = BODY[at:] if size < 0 else BODY[at: at + size]
            assert got == want
            at += len(want)
            assert f.tell() == at
        buffer = bytearray(10)
        assert f.readinto(buffer) == len(BODY[at: at + 10]) and bytes(buffer[: len(BODY[at: at + 10])]) == BODY[at: at + 10]


def test_a_stream_asks_for_the_next_block_while_the_reader_works_on_this_one(bucket, s3_server):
    options, etag = bucket
    with FaultProxy(s3_server, rate=0) as proxy:
        fs, path = native_s3.client("s3://native/o.bin", {**options, "endpoint_url": proxy.url})
        with native_s3.NativeObject(fs, path, "s3://native/o.bin", etag, retries.Policy(), block=50_000) as stream:
            stream.read(10)
            stream._next[1].join()  # the block after the first was asked for before anyone read it
            got = [r for m, _, r in proxy.log if m == "GET"]
            assert got == ["bytes=0-49999", "bytes=50000-99999"]
            assert bytes(stream.read(49_990)) == BODY[10:50_000]
            assert len([m for m, _, _ in proxy.log if m == "GET"]) == 2  # the rest of this block: no request


def test_a_footer_the_store_fails_to_give_is_not_called_a_damaged_file(bucket, monkeypatch):
    from curate.errors import InputError
    from curate.io.sources import open_parquet

    options, _ = bucket

    def slow_down(self, at, n):  # what is left after the policy's last try
        raise OSError("AWS Error SLOW_DOWN during GetObject operation: Please reduce your request rate.")

    monkeypatch.setattr(native_s3.NativeObject, "_range", slow_down)
    with pytest.raises(InputError, match=r"s3://native/o\.bin: cannot read it from the store: AWS Error SLOW_DOWN"):
        open_parquet("s3://native/o.bin", options)
