"""SIGINT and SIGTERM in every phase of a command: out within seconds, 130 or 143, one message.

The first signal raises `Interrupted` in the main thread, so the command unwinds as it would on
an error: worker pools are killed, locks released, the message printed. Unwinding can hang (a
signal landing inside concurrent.futures' locks) or never start (the main thread busy in a
long C call, where Python runs no signal handler), so a watcher thread also hears the signal, at
the C level, through a wakeup fd: if the command has not ended `GRACE_SECONDS` later, or at a
second signal, it prints the message and exits the process itself. That is safe at any point:
every file of a run appears under its final name only whole, workers die with their parent,
and the kernel drops the run's lock, so `--resume` continues from what is on disk.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

from curate.errors import Interrupted

GRACE_SECONDS = 5.0
EXIT_CODES: dict[int, int] = {signal.SIGINT: 130, signal.SIGTERM: 143}
MESSAGE = "interrupted; continue with --resume"

_received: list[int] = []  # signals heard, in order
_reported = threading.Lock()  # held by whoever prints the message: it is printed once
_installed = False


def install() -> None:
    """Take SIGINT and SIGTERM for this process (from the main thread; once per process)."""
    global _installed
    if _installed or threading.current_thread() is not threading.main_thread():
        return
    _installed = True
    read, write = os.pipe()
    os.set_blocking(write, False)
    signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    for signum in EXIT_CODES:
        signal.signal(signum, _raise)
    threading.Thread(target=_watch, args=(read,), daemon=True, name="curate-interrupts").start()
    os.register_at_fork(after_in_child=_forked)


def _forked() -> None:
    """In a forked child (a fork pool's worker): its signals must not reach the parent's watcher
    through the wakeup fd it inherited. A pool's terminate() sends its workers SIGTERM, which
    the watcher took for the command's own, and ended the process 5 s later with 143."""
    try:
        signal.set_wakeup_fd(-1)
    except ValueError:  # forked from another thread than the main one: no wakeup fd to undo there
        pass


def _raise(signum, frame) -> None:
    """The Python-level handler, in the main thread: the first signal unwinds the command."""
    if len(_received) > 1:  # the watcher ends the process
        return
    # The Interrupted may land in a finalizer (__del__, a generator's close), where Python prints it
    # as "Exception ignored", or end a pool's helper threads: an interrupted command's leftovers die
    # quietly, and its one message is the interrupt's.
    sys.unraisablehook = lambda unraisable: None
    threading.excepthook = lambda args: None
    raise Interrupted(signum)


def _watch(fd: int) -> None:
    deadline = None
    while True:
        os.set_blocking(fd, deadline is None)
        try:
            data = os.read(fd, 64)
        except BlockingIOError:
            data = b""
        for signum in data:
            if signum in EXIT_CODES:
                _received.append(signum)
                if deadline is None:
                    deadline = time.monotonic() + GRACE_SECONDS
                else:
                    exit_now()
        if deadline is not None:
            if time.monotonic() >= deadline:
                exit_now()
            time.sleep(0.05)


def report(signum: int | None = None) -> int:
    """Print the message, once; the exit code of the first signal heard, or of `signum` (the
    Interrupted's: the main thread may unwind before the watcher has read the signal), else 130."""
    if _reported.acquire(blocking=False):
        sys.stderr.write(MESSAGE + "\n")
        sys.stderr.flush()
    first = _received[0] if _received else signum
    return 130 if first is None else EXIT_CODES.get(first, 130)


def exit_now() -> None:
    """End the process at once with the first signal's code (the command did not unwind in time)."""
    code = report()
    os._exit(code)


def was_interrupted() -> bool:
    """Whether a signal was heard: then the command must not end as a success, whatever it swallowed."""
    return bool(_received)
