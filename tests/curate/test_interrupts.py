"""The interrupt guard (curate/interrupts.py): a command that swallows the first signal's
Interrupted, or hangs in a C call, still ends with the signal's code within the grace period;
a second signal ends it at once."""

import os
import signal
import subprocess
import sys
import time

import pytest

from curate import interrupts

# Swallows every Interrupted, as a command stuck while unwinding would: only the watcher ends it.
STUBBORN = """
import sys, time
from curate import interrupts
interrupts.install()


def stubborn():
    while True:
        try:
            time.sleep(100)
        except KeyboardInterrupt:
            pass


try:
    print("ready", flush=True)
    stubborn()
except KeyboardInterrupt:
    stubborn()
"""


def _start():
    proc = subprocess.Popen([sys.executable, "-c", STUBBORN], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert proc.stdout.readline().strip() == b"ready"
    return proc


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_command_that_does_not_unwind_is_ended_after_the_grace_period(sig, code):
    proc = _start()
    sent = time.monotonic()
    proc.send_signal(sig)
    assert proc.wait(timeout=30) == code
    assert interrupts.GRACE_SECONDS <= time.monotonic() - sent < interrupts.GRACE_SECONDS + 5
    assert proc.stderr.read().decode().count("interrupted; continue with --resume") == 1


def test_a_second_signal_ends_the_command_at_once():
    proc = _start()
    proc.send_signal(signal.SIGTERM)
    time.sleep(0.5)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 143  # the first signal's code
    assert time.monotonic() - sent < interrupts.GRACE_SECONDS


# A fork pool after install(): terminate() sends its workers SIGTERM, which they wrote to the
# wakeup fd they inherited, so the parent's watcher ended the process (`curate demo -w 2` exited
# 143 five seconds after its pool closed; an xdist worker running the demo's test died).
FORK_POOL = """
import multiprocessing, time
from curate import interrupts
interrupts.install()
with multiprocessing.get_context("fork").Pool(2) as pool:
    assert pool.map(abs, [-1, -2]) == [1, 2]
time.sleep(interrupts.GRACE_SECONDS + 1)
print("alive", flush=True)
"""


def test_a_fork_pools_terminated_workers_do_not_end_the_command():
    done = subprocess.run([sys.executable, "-c", FORK_POOL], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert done.returncode == 0 and "alive" in done.stdout, (done.returncode, done.stderr)


def test_an_error_raised_while_unwinding_from_a_signal_ends_as_the_signal(capsys, monkeypatch):
    """A SIGTERM to the run's process group ends the pool's workers too; the pool, broken, may
    raise while the run unwinds. That error is the signal's doing: exit 143 and the interrupt's
    message, not "a worker process died" and exit 1 (as CI once saw)."""
    import threading
    from concurrent.futures.process import BrokenProcessPool

    import typer

    from curate.cli_errors import fail
    from curate.errors import Interrupted

    monkeypatch.setattr(interrupts, "_reported", threading.Lock())  # the message not yet printed
    try:
        try:
            raise Interrupted(signal.SIGTERM)
        except Interrupted:
            raise BrokenProcessPool("A child process terminated abruptly")
    except BrokenProcessPool as e:
        unwinding = e
    with pytest.raises(typer.Exit) as ended:
        fail(unwinding)
    assert ended.value.exit_code == 143
    err = capsys.readouterr().err
    assert interrupts.MESSAGE in err and "worker process died" not in err
