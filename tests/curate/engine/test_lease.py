"""The lock of a run whose output is on a store: a lease object created only where none is, taken
over when its lease ended or its holder on this host is dead, checked before publishing."""

import json
import os
import socket
import subprocess
import sys
import time
import uuid

import fsspec
import pytest

from curate.engine.rundir import lease as lease_module
from curate.engine.rundir.lease import LeaseLost, StoreLease, stale
from curate.engine.rundir.run_dir import RunLocked
from curate.engine.rundir.store_files import StoreFiles
from tests.curate.io import motokit


@pytest.fixture
def store():
    """A fresh memory:// prefix and its files."""
    root = f"memory://lease-{uuid.uuid4().hex}"
    yield root, StoreFiles(root)
    fs = fsspec.filesystem("memory")
    if fs.exists(root):
        fs.rm(root, recursive=True)


def held_by(files: StoreFiles, path: str, **holder) -> None:
    files.write_bytes(path, json.dumps({"pid": 1, "host": "elsewhere", "token": "theirs", **holder}).encode())


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_second_lease_is_refused_until_the_first_is_released(store):
    root, files = store
    first = StoreLease(files, f"{root}/_work/lock", root)
    first.acquire()
    try:
        with pytest.raises(RunLocked, match=f"pid \\d+ on {socket.gethostname()}"):
            StoreLease(files, f"{root}/_work/lock", root).acquire()
        first.check()
    finally:
        first.release()
    assert not files.exists(f"{root}/_work/lock")
    second = StoreLease(files, f"{root}/_work/lock", root)
    second.acquire()
    second.release()


def test_a_live_lease_of_another_host_is_refused_and_kept(store):
    root, files = store
    held_by(files, f"{root}/_work/lock", until=time.time() + 30)
    with pytest.raises(RunLocked, match="pid 1 on elsewhere"):
        StoreLease(files, f"{root}/_work/lock", root).acquire()
    assert json.loads(files.read_bytes(f"{root}/_work/lock"))["token"] == "theirs"


@pytest.mark.parametrize("holder", [
    {"until": 0},  # its lease ended: a holder on any machine that stopped renewing it
    "dead here",  # held on this host by a process that is gone (a SIGKILL): no need to wait
    {"garbage": True},  # not a lock curate wrote whole
], ids=["expired", "dead-pid-here", "unreadable"])
def test_a_stale_lease_is_taken_over(store, holder):
    root, files = store
    if holder == "dead here":
        holder = {"host": socket.gethostname(), "pid": dead_pid(), "until": time.time() + 30}
    files.write_bytes(f"{root}/_work/lock", json.dumps(holder).encode())
    taker = StoreLease(files, f"{root}/_work/lock", root)
    taker.acquire()
    try:
        assert json.loads(files.read_bytes(f"{root}/_work/lock"))["token"] == taker.token
    finally:
        taker.release()


def test_staleness_boundaries():
    here = socket.gethostname()
    now = time.time()
    assert not stale({"host": "elsewhere", "pid": 1, "until": now + 1}, now)
    assert stale({"host": "elsewhere", "pid": 1, "until": now - 1}, now)
    assert not stale({"host": here, "pid": os.getpid(), "until": now + 1}, now)  # this live process
    assert stale({"host": here, "pid": dead_pid(), "until": now + 1}, now)


def test_a_lease_taken_over_is_lost_and_its_run_may_not_publish(store, monkeypatch):
    root, files = store
    monkeypatch.setattr(lease_module, "RENEW", 0.05)
    ours = StoreLease(files, f"{root}/_work/lock", root)
    ours.acquire()
    held_by(files, f"{root}/_work/lock", until=time.time() + 30)  # another run took it over
    deadline = time.monotonic() + 5
    while not ours.lost and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ours.lost
    with pytest.raises(LeaseLost, match="lost its lock"):
        ours.check()
    ours.release()
    assert json.loads(files.read_bytes(f"{root}/_work/lock"))["token"] == "theirs"  # theirs stays


def test_the_lease_is_renewed_while_held(store, monkeypatch):
    root, files = store
    monkeypatch.setattr(lease_module, "RENEW", 0.05)
    held = StoreLease(files, f"{root}/_work/lock", root)
    held.acquire()
    try:
        first = json.loads(files.read_bytes(f"{root}/_work/lock"))["until"]
        time.sleep(0.3)
        assert json.loads(files.read_bytes(f"{root}/_work/lock"))["until"] > first
    finally:
        held.release()


def test_s3_creates_the_lock_only_where_none_is():
    """S3's conditional PUT (If-None-Match: *), on moto's server: the second create is refused."""
    with motokit.server() as endpoint, pytest.MonkeyPatch.context() as mp:
        motokit.use(mp, endpoint, "locks")
        files = StoreFiles("s3://locks/run")
        assert files.create("s3://locks/run/_work/lock", b"first")
        assert not files.create("s3://locks/run/_work/lock", b"second")
        assert files.read_bytes("s3://locks/run/_work/lock") == b"first"
        first = StoreLease(files, "s3://locks/run/_work/x", "s3://locks/run")
        first.acquire()
        with pytest.raises(RunLocked):
            StoreLease(files, "s3://locks/run/_work/x", "s3://locks/run").acquire()
        first.release()


def test_a_create_whose_answer_was_lost_still_holds_the_lease(store, monkeypatch):
    """A retried conditional PUT that had gone through is refused (412): the lock is ours anyway."""
    root, files = store
    real = StoreFiles.create

    def answer_lost(self, path, data):
        real(self, path, data)
        return False

    monkeypatch.setattr(StoreFiles, "create", answer_lost)
    held = StoreLease(files, f"{root}/_work/lock", root)
    held.acquire()
    try:
        held.check()
    finally:
        held.release()
