"""Child processes that never outlive their parent: a run's workers, and the processes a model
operator starts for itself (image decode workers)."""

from __future__ import annotations

import os
import signal
import sys
import time


def die_with_parent(parent_pid: int) -> None:
    """A child must never outlive the process that started it (a run's worker would write into
    _work beside a resume; a decode worker would hold memory for nothing): the kernel kills it
    when the parent dies (Linux), else a watchdog thread does."""
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    else:
        import threading

        def watch() -> None:
            while os.getppid() == parent_pid:
                time.sleep(0.5)
            os._exit(1)

        threading.Thread(target=watch, daemon=True).start()
    if os.getppid() != parent_pid:  # the parent died before the line above took effect
        os._exit(1)
