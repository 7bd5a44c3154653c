"""The lock of a run whose output is on an object store: a lease object, `OUT/_work/lock`.

A store has no flock, so the lock is an object created only where none is (S3's conditional PUT,
If-None-Match: *; an exclusive create on other filesystems) holding the holder's host, pid, a
token of its own and when the lease ends. The holder renews it every RENEW seconds from a
thread; a lock whose lease ended (a holder gone without releasing it, on any machine), or whose
holder was on this host and is dead (a SIGKILL: resume at once, without waiting for the lease
to end), is stale and taken over. The run checks that it still holds the lock before it writes
its manifest, so a run that lost its lease (stalled past its end, then overtaken) never
publishes over the run that took it. (Two runs taking over the same stale lock at once can both
start: a store's delete is not conditional. The create after it decides which holds the lock,
and the other one stops at that check, before it publishes.)
"""

from __future__ import annotations

import json
import os
import posixpath
import socket
import threading
import time
import uuid

from curate.engine.rundir.store_files import StoreFiles
from curate.errors import CurateError

LEASE = 60.0  # seconds a lock holds without renewal
RENEW = LEASE / 4


class LeaseLost(CurateError):
    """Another run took the lock over (this one stalled past its lease)."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        pass
    return True


def stale(holder: dict, now: float) -> bool:
    """Whether the lock `holder` wrote may be taken over: its lease ended, or it was held on this
    host by a process that is gone."""
    try:
        if now > float(holder["until"]):
            return True
        return holder["host"] == socket.gethostname() and not _alive(int(holder["pid"]))
    except (KeyError, TypeError, ValueError):  # not a lock curate wrote whole: nothing holds it
        return True


class StoreLease:
    """The lease at `path` on `files`' store, for the run writing `root` (named in messages)."""

    def __init__(self, files: StoreFiles, path: str, root: str):
        self.files, self.path, self.root = files, path, root
        self.token = uuid.uuid4().hex
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.lost = False

    def _body(self) -> bytes:
        return json.dumps(
            {"pid": os.getpid(), "host": socket.gethostname(), "token": self.token, "until": time.time() + LEASE}
        ).encode()

    def _holder(self) -> dict | None:
        """The lock's content now; None when there is no lock."""
        self.files.refresh()
        try:
            value = json.loads(self.files.read_bytes(self.path))
        except FileNotFoundError:
            return None
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}

    def acquire(self) -> None:
        from curate.engine.rundir.run_dir import RunLocked

        for _ in range(10):  # a takeover races other runs taking it over too: the create decides
            if self.files.create(self.path, self._body()):
                break
            holder = self._holder()
            if holder is None:
                continue  # released between our create and our read
            if holder.get("token") == self.token:  # our create went through, its answer was lost and retried
                break
            if not stale(holder, time.time()):
                raise RunLocked(
                    f"{self.root}: another curate run is writing here (pid {holder.get('pid')} on "
                    f"{holder.get('host')}; its lease at {self.path} is renewed every {RENEW:.0f}s); "
                    f"wait for it to finish or stop it first (a stopped run's lease ends within "
                    f"{LEASE:.0f}s)"
                )
            self._take_over(holder)
        else:
            raise RunLocked(f"{self.root}: could not take the lock at {self.path}: other runs keep taking it")
        self._thread = threading.Thread(target=self._renew, daemon=True, name="curate-lease")
        self._thread.start()

    def _take_over(self, holder: dict) -> None:
        """Remove a stale lock, unless another run replaced it since it was read."""
        if self._holder() == holder:
            self.files.remove(self.path)

    def _renew(self) -> None:
        while not self._stop.wait(RENEW):
            try:
                holder = self._holder()
                if holder is None or holder.get("token") != self.token:
                    self.lost = True
                    return
                self.files.write_bytes(self.path, self._body())
            except Exception:  # noqa: BLE001 - a failed renewal is retried; the check before publishing decides
                continue

    def check(self) -> None:
        """Raise LeaseLost unless this run still holds the lock (before it publishes)."""
        holder = self._holder()
        if self.lost or holder is None or holder.get("token") != self.token:
            raise LeaseLost(
                f"{self.root}: this run lost its lock at {self.path} (it was stalled past its "
                f"{LEASE:.0f}s lease and another run took it over); not publishing over that run"
            )

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
            holder = self._holder()
            if holder is not None and holder.get("token") == self.token:
                self.files.remove(self.path)
            work = posixpath.dirname(self.path)
            if not self.files.names(work):  # a filesystem with directories (file://) keeps it empty
                self.files.remove(work)
