"""One Slurm array task of a run: `python -m curate.engine.slurm.task BATCH_DIR ITEM` (or, the run
finished, `--drop-mirror WORK SESSION` on a node that mirrored `_work/`: engine.py _drop_mirrors).

BATCH_DIR is a batch that the driver (engine.py) wrote under the run's `_work/slurm/`: `batch.json`
(the run's lock files, the driver that submitted it, the working directory, the task's cores),
`ctx.pkl` (the stage's context and work store, for a stage's tasks) and `items/ITEM.pkl`: a share
of the stage's tasks, each run in turn by work/worker.py's run_task as a local worker runs it
(same shards, trace, done marker), or pieces of `map` work (a function and the arguments of each
piece). The results are written to `results/ITEM.pkl` whole (a temporary name, then renamed),
after the Slurm job and node that ran it to `where/ITEM.json` (the manifest's record); an error
raised by the work to `errors/ITEM.pkl` (the driver stops the run with it); rows counts to
`progress/ITEM.json`.

Before any work it checks that the driver that submitted it still holds the run's lock, and
keeps looking while it works: an array task whose driver was killed exits (status 3), at once,
as local workers die with their parent; its files under temporary names are left for a
`--resume` to redo.
It holds the run's worker lock (shared) while it works, as local workers do, so a `--resume`
waits for it before it reads the run directory.

With a work store (`--work-store`: the launch script exports STORE_ENV, WORK_ENV and SESSION_ENV),
a task on a node that does not see BATCH_DIR (a "blind" node: it shares no disk with the driver)
works in a mirror of `_work/` at the same path (work_store.mirror): it fetches its batch's files
from the store, its shards and fitted state too (work_store.run_task), runs a fit's pieces through
shared_dir.run_piece, and puts there what the driver reads (its result, record, error, rows counts
and log) as well as its task's files. It cannot see the run's locks there: it neither waits on
nor watches the driver, and runs to its end (a --resume finds its files in the store).
"""

from __future__ import annotations

import fcntl
import json
import os
import pickle
import sys
import threading
import time
import traceback
from pathlib import Path

DRIVER_GONE = 3  # exit status of an array task whose driver no longer holds the run
STORE_ENV, WORK_ENV, SESSION_ENV = "CURATE_SLURM_STORE", "CURATE_SLURM_WORK", "CURATE_SLURM_SESSION"
LOG_ENV = "CURATE_SLURM_LOG"  # an srun step's log name (an array task's: JOB_INDEX.out)


def node_log(session: str, name: str) -> str:
    """Where Slurm writes a task's log on its node when the nodes share no disk (/tmp is on every node)."""
    return f"/tmp/curate-slurm-{session}-{name}"


def log_name() -> str:
    """This task's log's name in its batch's logs/ (what the driver looks for)."""
    env = os.environ
    return env.get(LOG_ENV) or f"{env.get('SLURM_ARRAY_JOB_ID', '?')}_{env.get('SLURM_ARRAY_TASK_ID', '?')}.out"


WATCH_SECONDS = 2.0  # how often a running task looks whether its driver still holds the run


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def driver_alive(lock_path: str, driver: dict) -> bool:
    """Whether the run's lock is held, by the driver process that submitted this task."""
    try:
        fd = os.open(lock_path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:  # held: by our driver only if the lock file names it
            try:
                holder = json.loads(os.read(fd, 4096) or b"{}")
            except ValueError:
                return True  # being written: a run holds it, give it the benefit
            return holder.get("pid") == driver.get("pid") and holder.get("host") == driver.get("host")
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False  # nobody holds the run
    finally:
        os.close(fd)


_finished = threading.Event()  # the result (or error) is written: the driver may end the run now


def _watch_driver(lock_path: str, driver: dict, seconds: float = WATCH_SECONDS) -> None:
    """Die with the driver, as local workers die with their parent: a thread looks every few
    seconds whether it still holds the run's lock, and ends this process at once when it does not
    (what the task was writing is under temporary names; a --resume runs it again)."""

    def watch() -> None:
        while True:
            time.sleep(seconds)
            if not _finished.is_set() and not driver_alive(lock_path, driver):
                sys.stderr.write(
                    f"curate: the run's driver (pid {driver.get('pid')} on {driver.get('host')}) no "
                    f"longer holds {lock_path}: stopping\n"
                )
                sys.stderr.flush()
                os._exit(DRIVER_GONE)

    threading.Thread(target=watch, daemon=True, name="curate-driver-watch").start()


class _ProgressFile:
    """Where run_task_in_worker puts a task's rows counts: summed per step, written to
    progress/ITEM.json at most once a second and at the end, for the driver to relay (`put`:
    also into the work store, on a blind node)."""

    def __init__(self, path: Path, put=lambda path: None):
        self.path = path
        self.put_file = put
        self.totals: dict[str, list[int]] = {}
        self.written = 0.0

    def put(self, item: tuple[str, int, int]) -> None:
        label, rows_in, rows_out = item
        counts = self.totals.setdefault(label, [0, 0])
        counts[0] += rows_in
        counts[1] += rows_out
        if time.monotonic() - self.written >= 1.0:
            self.flush()

    def flush(self) -> None:
        if self.totals:
            _write(self.path, json.dumps(self.totals).encode())
            self.put_file(self.path)
        self.written = time.monotonic()


def where() -> dict:
    """This process's Slurm job (`ARRAY_INDEX` for an array task, `JOB.STEP` for an srun step) and node."""
    env = os.environ
    if env.get("SLURM_ARRAY_JOB_ID") and env.get("SLURM_ARRAY_TASK_ID"):
        job = f"{env['SLURM_ARRAY_JOB_ID']}_{env['SLURM_ARRAY_TASK_ID']}"
    elif env.get("SLURM_STEP_ID"):
        job = f"{env.get('SLURM_JOB_ID', '?')}.{env['SLURM_STEP_ID']}"
    else:
        job = env.get("SLURM_JOB_ID", "?")
    return {"job": job, "node": env.get("SLURMD_NODENAME") or os.uname().nodename}


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "--drop-mirror":  # WORK SESSION: a finished run's leftovers on this node
        from curate.engine.work import work_store

        work_store.drop_mirror(Path(argv[1]), argv[2])
        logs = Path(node_log(argv[2], "*"))
        for log in logs.parent.glob(logs.name):
            log.unlink(missing_ok=True)
        return 0
    if len(argv) != 2:
        print("usage: python -m curate.engine.slurm.task BATCH_DIR ITEM", file=sys.stderr)
        return 2
    directory, item = Path(argv[0]), int(argv[1])
    store = None
    if os.environ.get(STORE_ENV):
        from curate.engine.work.work_store import MIRROR_TAG

        # A node that does not see _work/ (or sees a mirror of it, made by an earlier task there):
        # the batch from the store
        if not (directory / "batch.json").exists() or (Path(os.environ[WORK_ENV]) / MIRROR_TAG).exists():
            store = _blind(directory, item)
    try:
        return _main(directory, item, store)
    finally:
        if store is not None:  # what Slurm has written of its log, for the driver's messages
            log = Path(node_log(os.environ[SESSION_ENV], log_name()))
            if log.exists():
                store.put_bytes(directory / "logs" / log_name(), log.read_bytes())


def _blind(directory: Path, item: int):
    """On a node that does not see `_work/`: its mirror readied (work_store.mirror) and the batch's
    files this item needs fetched into it from the work store; the store."""
    from curate.engine.work import work_store

    store = work_store.WorkStore(os.environ[STORE_ENV], Path(os.environ[WORK_ENV]))
    work_store.mirror(store.work, os.environ[SESSION_ENV])
    for sub in ("items", "results", "errors", "progress", "where"):
        (directory / sub).mkdir(parents=True, exist_ok=True)
    for path in (directory / "batch.json", directory / "items" / f"{item}.pkl"):
        data = store.read_bytes(path)
        if data is not None:  # else a surplus index: main says so
            _write(path, data)
    return store


def _main(directory: Path, item: int, store) -> int:
    blind = store is not None
    batch = json.loads((directory / "batch.json").read_text())
    item_file = directory / "items" / f"{item}.pkl"
    if not item_file.exists():  # a surplus index of an array (never submitted by curate itself)
        print(f"curate: no item {item} in {directory}", file=sys.stderr)
        return 0

    def out(path: Path, data: bytes) -> None:  # a file for the driver: in the store too, from a blind node
        _write(path, data)
        if blind:
            store.put(path)

    from curate.engine.rundir.run_dir import hold_worker_lock

    if blind:
        print(
            f"curate: {directory} is not on this node's disk: the batch comes from the work store {store.uri}",
            file=sys.stderr,
            flush=True,
        )
    else:
        hold_worker_lock(batch["workers_lock"])  # until this process exits: a --resume waits for it
    if not blind and _driver_gone(batch, item):
        return DRIVER_GONE
    if not blind:
        _watch_driver(batch["lock"], batch["driver"])
    if os.path.isdir(batch["cwd"]):
        os.chdir(batch["cwd"])
    from curate.engine.work.worker import use_cores

    use_cores(int(batch.get("threads", 1)))
    if not batch.get("steal"):
        return _run_item(directory, batch, item, store, out)
    # A stage's share: claimed first (another array task, its own share done, may have taken it);
    # then, this share done, the shares above it that no array task has started, highest first:
    # those whose own array tasks would start last (the driver cancels them once all are in)
    claim = _claim(directory, item)
    if claim is None:
        print(f"curate: item {item} of {directory.name} was run by another array task", file=sys.stderr, flush=True)
        return 0
    with claim:
        status = _run_item(directory, batch, item, store, out)
    for other in range(len(batch["tasks"]) - 1, item, -1):
        if status:
            break
        if _driver_gone(batch, other):  # it may be gone since this task started: no new work then
            return DRIVER_GONE
        claim = _claim(directory, other)
        if claim is not None:
            with claim:
                status = _run_item(directory, batch, other, store, out)
    return status


def _driver_gone(batch: dict, item: int) -> bool:
    """Whether the driver that submitted the batch no longer holds the run (said in the log)."""
    if driver_alive(batch["lock"], batch["driver"]):
        return False
    print(
        f"curate: the run's driver (pid {batch['driver'].get('pid')} on {batch['driver'].get('host')}) no "
        f"longer holds {batch['lock']}: not running item {item}",
        file=sys.stderr,
    )
    return True


def _claim(directory: Path, item: int):
    """`item`'s claim file, locked by this process while it runs the item (the kernel lets go of
    it when the process ends, however it ends), or None when another process holds it or the
    item's result is in. The driver takes a held claim as the item running (engine.py)."""
    try:
        f = open(directory / "claims" / str(item), "a")
    except OSError:  # the batch is gone: the driver is done with it
        return None
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        return None
    if (directory / "results" / f"{item}.pkl").exists():
        f.close()
        return None
    return f


def _run_item(directory: Path, batch: dict, item: int, store, out) -> int:
    """Run one item of the batch, its result (or its error) written for the driver."""
    blind = store is not None
    from curate.engine.failpoints import failpoint

    _finished.clear()  # while it runs, the driver's end stops this process (_watch_driver)
    print(
        f"curate: item {item} of {directory.name} on {os.uname().nodename} "
        f"(Slurm job {os.environ.get('SLURM_JOB_ID', '?')})",
        file=sys.stderr,
        flush=True,
    )
    work = pickle.loads((directory / "items" / f"{item}.pkl").read_bytes())
    result: object  # the TaskResults of a share of a stage's tasks, or the results of `map` pieces
    try:
        if work[0] == "tasks":  # ("tasks", [task, ...]): a share of a stage's tasks, in turn
            from curate.engine.work import work_store

            if blind:
                data = store.read_bytes(directory / batch["ctx"])
                assert data is not None, "the driver puts ctx.pkl in the store before it submits"
                _write(directory / batch["ctx"], data)
            ctx, task_store = pickle.loads((directory / batch["ctx"]).read_bytes())
            progress = _ProgressFile(directory / "progress" / f"{item}.json", store.put if blind else lambda p: None)
            result = [
                work_store.run_task(
                    task_store, ctx, task, blind=blind, session=os.environ.get(SESSION_ENV, ""), queue=progress
                )
                for task in work[1]
            ]
            progress.flush()
        elif work[0] == "calls":  # ("calls", fn, [args, ...]): pieces of `map` work, in turn
            _, fn, pieces = work
            result = []
            for args in pieces:
                result.append(fn(*args))
                failpoint("map-piece")
        else:  # ("shared", fit directory, its view, fn, [args, ...]): a fit's pieces, with a work store
            from curate.engine.work import shared_dir

            _, files_in, view, fn, pieces = work
            shared: list[tuple[object, dict]] = []  # each piece's result and the files it wrote (for receive)
            result = shared
            for args in pieces:
                shared.append(shared_dir.run_piece(store, Path(files_in), view, fn, args) if blind else (fn(*args), {}))
                failpoint("map-piece")
        _finished.set()  # a driver that sees the result may remove _work/ (its lock) before this process exits
        if (directory / "where").is_dir():  # for the manifest: the job and node that gave the result
            out(directory / "where" / f"{item}.json", json.dumps({**where(), "blind": blind}).encode())
        out(directory / "results" / f"{item}.pkl", pickle.dumps(result))
    except Exception as e:  # noqa: BLE001 - the driver stops the run with it
        from curate.engine.work.worker import WorkerError
        from curate.errors import CurateError

        traceback.print_exc()
        error = (
            e
            if isinstance(e, (CurateError, WorkerError))
            else WorkerError(f"{type(e).__name__}: {e}", traceback.format_exc())
        )  # a bug: its traceback for --debug
        try:
            data = pickle.dumps(error)
            pickle.loads(data)
        except Exception:  # noqa: BLE001 - an exception that does not cross processes: its text does
            data = pickle.dumps(WorkerError(f"{type(e).__name__}: {e}", traceback.format_exc()))
        _finished.set()
        out(directory / "errors" / f"{item}.pkl", data)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
