"""What the bench scripts share: the demo corpus on disk, timed runs with peak memory, and RESULTS.md.

Scripts run from the repository root with the system python (`python bench/bench_x.py`); curate is
run as a subprocess (`python -m curate.cli run ...`), the anchors with their venvs' interpreters.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"
DATA = BENCH / ".data"
RUNS = BENCH / ".runs"
VENVS = BENCH / ".venvs"
CURATE = [sys.executable, "-m", "curate.cli"]

sys.path.insert(0, str(REPO))

from curate.manifest import Manifest, StepEntry, read  # noqa: E402  (curate from the repository put on the path)


# The benches' corpus: ~1.8 GB of JSONL.gz, ~4.4 GB of JSON lines; its first files make smaller inputs.
# BENCH_CORPUS=DOCS,FILES picks a smaller corpus for a smoke run of the scripts.
_docs, _files = map(int, os.environ.get("BENCH_CORPUS", "1400000,96").split(","))
CORPUS = {"docs": _docs, "files": _files, "seed": 0}
CORPUS_DIR = DATA / ("corpus" if (_docs, _files) == (1_400_000, 96) else f"corpus-{_docs}-{_files}")


def corpus(workers: int = 2) -> Path:
    """The benches' demo corpus (CORPUS) under bench/.data/, generated once and reused."""
    from curate.demo import generate

    marker = CORPUS_DIR / "corpus.json"
    if marker.exists() and json.loads(marker.read_text()) == CORPUS:
        return CORPUS_DIR
    start = time.perf_counter()
    generate(CORPUS_DIR, **CORPUS, workers=workers)
    marker.write_text(json.dumps(CORPUS))
    print(f"generated {CORPUS_DIR} in {time.perf_counter() - start:.0f}s")
    return CORPUS_DIR


def demo_files(name: str, docs: int, files: int, workers: int = 1) -> list[Path]:
    """A small demo corpus of its own (`docs` documents in `files` JSONL.gz files) under
    bench/.data/NAME-DOCS-FILES/, generated once and reused."""
    from curate.demo import generate

    folder = DATA / f"{name}-{docs}-{files}"
    marker = folder / "corpus.json"
    if not (marker.exists() and json.loads(marker.read_text()) == {"docs": docs, "files": files}):
        generate(folder, docs=docs, files=files, seed=0, workers=workers)  # the same bytes for any workers
        marker.write_text(json.dumps({"docs": docs, "files": files}))
    return sorted(folder.glob("part-*.jsonl.gz"))


def made_once(folder: Path, spec: dict, make) -> Path:
    """`folder`, filled by `make(folder)` unless an earlier call finished it (its done.json, holding `spec`)."""
    marker = folder / "done.json"
    if not marker.exists():
        folder.mkdir(parents=True, exist_ok=True)
        make(folder)
        marker.write_text(json.dumps(spec))
    return folder


def unit_rows(rng, n: int, dim: int):
    """n random directions in dim dimensions (float32 unit rows): cluster centres of synthetic embeddings."""
    import numpy as np

    x = rng.normal(size=(n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def half_embeddings(x):
    """The rows of `x`, L2-normalised, as an embedding column (fixed_size_list<halffloat>[dim])."""
    import numpy as np
    import pyarrow as pa

    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    return pa.FixedSizeListArray.from_arrays(pa.array(x.astype(np.float16).ravel(), pa.float16()), x.shape[1])


def corpus_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("part-*.jsonl.gz"))


def corpus_gb(gb: float) -> list[Path]:
    """The first demo-corpus files making `gb` GB of JSONL.gz."""
    files, total = [], 0
    for f in corpus_files(corpus()):
        if total >= gb * 1e9:
            break
        files.append(f)
        total += f.stat().st_size
    return files


def size_gb(paths) -> float:
    return sum(p.stat().st_size for p in paths) / 1e9


@dataclass
class Measured:
    seconds: float
    peak_rss_gb: float  # the most the whole process tree held at once (sampled every 0.1 s)
    cpu_seconds: float  # user + system CPU of every process of the tree: steadier than wall time on shared cores
    returncode: int
    output: str
    # The most one process held at once (sampled): a Global's fit runs in one, its pieces in others.
    peak_process_gb: float = 0.0
    # How far the used bytes of the filesystem of the log rose above where they were at the start
    # (sampled every 0.1 s): the run's peak disk, plus whatever else wrote there meanwhile.
    peak_disk_gb: float = 0.0
    # The most the command's own process held (a `curate run`: the driver), and the most any other
    # process of the tree held (workers, sandboxes); how many processes the samples saw.
    peak_driver_gb: float = 0.0
    peak_process_other_gb: float = 0.0
    processes: int = 0


def _become_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (Linux PR_SET_CHILD_SUBREAPER).

    A tool whose pool outlives its parent (datatrove's forkserver, say) is then re-parented to us
    instead of to init, so we wait for it and its CPU time lands in our RUSAGE_CHILDREN.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


SUBREAPER = _become_subreaper()


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _children_of(pid: int) -> list[int]:
    """Child pids of `pid`, from /proc/PID/task/*/children (no scan of all of /proc)."""
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    out += [int(c) for c in f.read().split()]
            except OSError:
                continue
    except OSError:
        pass
    return out


def _tree_sample(roots: list[int], cpu_ticks: dict[int, int], peaks: dict[int, int] | None = None) -> int:
    """Resident bytes of `roots` and all their descendants, from /proc; records each one's CPU ticks so far
    (and, given `peaks`, each one's largest resident bytes)."""
    rss, stack, seen = 0, list(roots), set()
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()  # fields[i] is stat field i + 3
        except OSError:
            continue
        if fields[0] != "Z":
            rss += int(fields[21]) * _PAGE
            if peaks is not None:
                peaks[pid] = max(peaks.get(pid, 0), int(fields[21]) * _PAGE)
        cpu_ticks[pid] = max(cpu_ticks.get(pid, 0), int(fields[11]) + int(fields[12]))  # utime + stime
        stack.extend(_children_of(pid))
    return rss


def _our_children(exclude: set[int]) -> list[int]:
    return [p for p in _children_of(os.getpid()) if p not in exclude]


def _reap_orphans(before: set[int], grace: float = 60.0) -> None:
    """Wait for the descendants that were re-parented to us (we are their subreaper), then reap them:
    their CPU counts in RUSAGE_CHILDREN only once they are waited for. Past `grace` seconds, kill them."""
    deadline = time.perf_counter() + grace
    while True:
        pending = _our_children(before)
        if not pending:
            return
        for pid in pending:
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                continue
            if not done and time.perf_counter() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
        time.sleep(0.05)


def run_measured(cmd: list[str], *, cwd: Path = REPO, env: dict | None = None, log: Path | None = None,
                 kill_after: float | None = None) -> Measured:
    """Run `cmd`; its wall time, the peak RSS of its process tree and the CPU seconds of the whole tree.

    CPU: getrusage(RUSAGE_CHILDREN) after every descendant is reaped (this process is their
    subreaper, so orphans come back to it); it includes processes too short-lived for the
    0.1 s /proc sampling. The /proc samples are a lower bound, used if they are larger.
    Output goes to `log`. `kill_after`: SIGKILL the whole process group after that many seconds.
    """
    log = log or RUNS / "last.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    full_env = {**os.environ, **(env or {})}
    peak, cpu_ticks, peaks = 0, {}, {}
    before = set(_our_children(set()))
    cpu0 = _children_cpu()
    disk0 = disk_peak = shutil.disk_usage(log.parent).used
    with open(log, "w") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=full_env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        while proc.poll() is None:
            peak = max(peak, _tree_sample([proc.pid, *_our_children(before | {proc.pid})], cpu_ticks, peaks))
            disk_peak = max(disk_peak, shutil.disk_usage(log.parent).used)
            if kill_after is not None and time.perf_counter() - start > kill_after:
                os.killpg(proc.pid, 9)
                proc.wait()
                break
            time.sleep(0.1)
        seconds = time.perf_counter() - start
    _reap_orphans(before)
    cpu = max(_children_cpu() - cpu0, sum(cpu_ticks.values()) / _TICK)
    return Measured(seconds, peak / 1e9, cpu, proc.returncode, log.read_text(errors="replace"),
                    max(peaks.values(), default=0) / 1e9, (disk_peak - disk0) / 1e9,
                    peaks.get(proc.pid, 0) / 1e9,
                    max((v for k, v in peaks.items() if k != proc.pid), default=0) / 1e9, len(peaks))


_PAGE = os.sysconf("SC_PAGE_SIZE")
_TICK = os.sysconf("SC_CLK_TCK")


def curate_run(recipe: Path, *args: str, log: Path | None = None, kill_after: float | None = None) -> Measured:
    return run_measured([*CURATE, "run", str(recipe), *args], log=log, kill_after=kill_after)


def write_recipe(path: Path, input_glob: str, output: Path, steps: list[str]) -> Path:
    """A recipe reading the demo corpus columns, with `steps` (operator names, default params)."""
    lines = ["name: bench", f"input: {{path: {json.dumps(input_glob)}, text_column: text, id_column: id}}",
             f"output: {{path: {json.dumps(str(output))}}}"]
    lines += ["steps:"] + [f"  - {s}: {{}}" for s in steps] if steps else ["steps: []"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def parquet_rows(folder: Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(p).metadata.num_rows for p in sorted(folder.glob("*.parquet")))


def require_ok(m: Measured, what: str) -> None:
    if m.returncode != 0:
        raise SystemExit(f"{what} failed (exit {m.returncode}); last output:\n{m.output[-3000:]}")


def bare_result(m: Measured, what: str) -> dict:
    """What a bare baseline run printed last (one JSON line), once it exited 0."""
    require_ok(m, what)
    return json.loads(m.output.strip().splitlines()[-1])


def manifest(out: Path) -> Manifest:
    """The manifest of the finished run at `out`, read through curate's typed model (an error names the file)."""
    path = out / "manifest.json"
    return read(path.read_bytes(), str(path))


def step_entry(out: Path, op: str) -> StepEntry:
    """The manifest entry of the first `op` step of the finished run at `out`."""
    return next(s for s in manifest(out).steps if s.op == op)


def table(headers: list[str], rows: list[list]) -> str:
    """A Markdown table (also readable printed)."""
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    line = lambda values: "| " + " | ".join(v.ljust(w) for v, w in zip(values, widths)) + " |"  # noqa: E731
    return "\n".join([line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|"] + [line(r) for r in cells])


def machine() -> str:
    mem_kb = next(int(ln.split()[1]) for ln in open("/proc/meminfo") if ln.startswith("MemTotal"))
    uname = subprocess.run(["uname", "-a"], capture_output=True, text=True).stdout.strip()
    return (f"`{uname}`; nproc {os.cpu_count()} (usable {len(os.sched_getaffinity(0))}); "
            f"RAM {mem_kb / 2**20:.1f} GiB; Python {platform.python_version()}")


def add_section_args(ap) -> None:
    """Every section script takes --section-out: bench/run_all.py collects the sections from there."""
    ap.add_argument("--section-out", type=Path,
                    help="write the section's Markdown body here (and headline figures to the same name .json); "
                         "bench/run_all.py assembles bench/RESULTS.md from these")


def emit(args, body: str, headlines: list[list[str]] | None = None) -> None:
    """Print the section body; with --section-out, also write it (and its headline rows) for run_all.

    headlines: rows of [comparison, wall figure, CPU figure, note] for the summary at the top of RESULTS.md.
    The scripts never write RESULTS.md themselves, so every figure there comes from one run_all invocation.
    """
    print(body)
    if getattr(args, "section_out", None):
        args.section_out.parent.mkdir(parents=True, exist_ok=True)
        args.section_out.write_text(body.strip() + "\n")
        args.section_out.with_suffix(".json").write_text(json.dumps(headlines or []))


def medians_vs_first(results: dict[str, list[tuple[float, float]]]) -> list[tuple[str, float, float, str, str]]:
    """(name, median wall, median CPU, wall vs the first variant, CPU vs it) per variant of
    `results` ({name: [(wall s, CPU s) per round]}): the first is the baseline."""
    names = list(results)
    base_w = statistics.median(w for w, _ in results[names[0]])
    base_c = statistics.median(c for _, c in results[names[0]])
    out = []
    for name in names:
        w = statistics.median(x for x, _ in results[name])
        c = statistics.median(x for _, x in results[name])
        out.append((name, w, c, f"{100 * (w / base_w - 1):+.1f}%", f"{100 * (c / base_c - 1):+.1f}%"))
    return out


def ratio(slow: float, fast: float) -> str:
    """`slow / fast` as a speed-up (how many times `fast` is quicker)."""
    return f"{slow / fast:.1f}x" if fast > 0 else "n/a"


def load() -> str:
    """The 1/5/15-minute load averages: the cores are shared, so every result says how busy they were."""
    return "/".join(f"{x:.1f}" for x in os.getloadavg())
