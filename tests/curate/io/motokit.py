"""A moto S3 server on loopback, for the tests that write to s3:// (output.upload, --work-store)."""

from __future__ import annotations

import contextlib

import pytest

from tests.conftest import free_port


@contextlib.contextmanager
def server():
    """A running moto S3 server; its endpoint URL. Skips where s3fs or moto is not installed."""
    pytest.importorskip("s3fs")
    moto_server = pytest.importorskip("moto.server")
    port = free_port()
    running = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    running.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        running.stop()


@pytest.fixture(scope="module")
def s3_server():
    """One moto server for a test module (import this fixture into it); its endpoint URL."""
    with server() as endpoint:
        yield endpoint


def use(monkeypatch, endpoint: str, bucket: str):
    """Point s3:// at `endpoint` here and in processes started from here, as a user would (AWS_*
    and FSSPEC_* variables), and create `bucket`; a boto3 client of the server."""
    import boto3
    import fsspec.config

    for k, v in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_DEFAULT_REGION": "us-east-1",
                 "FSSPEC_S3_ENDPOINT_URL": endpoint}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setitem(fsspec.config.conf, "s3", {"endpoint_url": endpoint})  # fsspec read its env already
    s3 = boto3.client("s3", endpoint_url=endpoint)
    s3.create_bucket(Bucket=bucket)
    return s3
