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
