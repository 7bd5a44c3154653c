"""Named points in a run where fault tests stop the process, so that a kill lands exactly there.

`CURATE_FAILPOINT=name` (or `name@N`, the N-th time that point is reached, from 1) makes the
process that reaches it print `failpoint NAME` to stderr and stop itself with SIGSTOP; the test
then kills it (a stopped process still dies of SIGKILL). With `CURATE_FAILPOINT_ONCE=PATH` it
fires only if PATH does not exist yet (and creates it), so a restarted worker does not stop
again. Off by default and free when off: one dict lookup.

Points: `stage-done` (a stage's tasks all finished), `task-done` (one task's result is in),
`fit` (inside a Global fit, after its first batch), `state-written` (a fit's state saved),
`staged` (output shards staged in data.tmp), `published-data` (data/ renamed into place, or
uploaded to an output URI; the manifest not yet written), `uploaded-data` (output.upload copied
data/ and trace/, not yet the manifest), in a model worker `model-batch` (a batch through the
model), in a CPU task `task-batch` (a batch through the stage's steps, before it is written), in
a Ray task of `map` work `map-piece` (a piece of a fit done, its result not yet returned), and
`llm-answer` (an LLM answer stored in the request cache).
"""

from __future__ import annotations

import os
import signal
import sys

_seen: dict[str, int] = {}


def failpoint(name: str) -> None:
    wanted = os.environ.get("CURATE_FAILPOINT")
    if not wanted:
        return
    point, _, nth = wanted.partition("@")
    if point != name:
        return
    _seen[name] = _seen.get(name, 0) + 1
    if _seen[name] != int(nth or 1):
        return
    once = os.environ.get("CURATE_FAILPOINT_ONCE")
    if once:
        try:
            os.close(os.open(once, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return
    sys.stderr.write(f"failpoint {name}\n")
    sys.stderr.flush()
    os.kill(os.getpid(), signal.SIGSTOP)
