"""What the bench scripts share: the demo corpus on disk, timed runs with peak memory, and RESULTS.md.

Scripts run from the repository root with the system python (`python bench/bench_x.py`); curate is
run as a subprocess (`python -m curate.cli run ...`), the anchors with their venvs' interpreters.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / "bench"
DATA = BENCH / ".data"
RUNS = BENCH / ".runs"
VENVS = BENCH / ".venvs"
# BENCH_RESULTS=path sends a smoke run's sections elsewhere.
RESULTS = Path(os.environ.get("BENCH_RESULTS", BENCH / "RESULTS.md"))
CURATE = [sys.executable, "-m", "curate.cli"]

sys.path.insert(0, str(REPO))


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


def corpus_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("part-*.jsonl.gz"))


def size_gb(paths) -> float:
    return sum(p.stat().st_size for p in paths) / 1e9


@dataclass
class Measured:
    seconds: float
    peak_rss_gb: float  # the most the whole process tree held at once (sampled every 0.1 s)
    cpu_seconds: float  # user + system CPU of every process of the tree: steadier than wall time on shared cores
    returncode: int
    output: str


def _tree_sample(root: int, cpu_ticks: dict[int, int]) -> int:
    """Resident bytes of `root` and all its descendants, from /proc; records each one's CPU ticks so far.

    CPU is read per process, not from getrusage, because pools whose workers are never waited for
    (datatrove's forkserver) leave no trace in RUSAGE_CHILDREN.
    """
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()  # fields[i] is stat field i + 3
        except OSError:
            continue
        pid = int(entry)
        children.setdefault(int(fields[1]), []).append(pid)
        stats[pid] = fields
    rss, stack = 0, [root]
    while stack:
        pid = stack.pop()
        if pid in stats:
            rss += int(stats[pid][21]) * _PAGE
            cpu_ticks[pid] = max(cpu_ticks.get(pid, 0), int(stats[pid][11]) + int(stats[pid][12]))  # utime + stime
        stack.extend(children.get(pid, ()))
    return rss


_PAGE = os.sysconf("SC_PAGE_SIZE")
_TICK = os.sysconf("SC_CLK_TCK")


def run_measured(cmd: list[str], *, cwd: Path = REPO, env: dict | None = None, log: Path | None = None,
                 kill_after: float | None = None) -> Measured:
    """Run `cmd`, timing it and sampling the peak RSS of its process tree; output goes to `log`.

    `kill_after`: SIGKILL the whole process group after that many seconds (for the resume bench).
    """
    log = log or RUNS / "last.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    full_env = {**os.environ, **(env or {})}
    peak, cpu_ticks = 0, {}
    with open(log, "w") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=full_env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        while proc.poll() is None:
            peak = max(peak, _tree_sample(proc.pid, cpu_ticks))
            if kill_after is not None and time.perf_counter() - start > kill_after:
                os.killpg(proc.pid, 9)
                proc.wait()
                break
            time.sleep(0.1)
        seconds = time.perf_counter() - start
    cpu = sum(cpu_ticks.values()) / _TICK  # misses at most the last 0.1 s of each process
    return Measured(seconds, peak / 1e9, cpu, proc.returncode, log.read_text(errors="replace"))


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


def append_results(title: str, body: str) -> None:
    """Append a dated section to bench/RESULTS.md (never rewriting what others wrote)."""
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    env = "".join(f"{k}={os.environ[k]} " for k in ("BENCH_CORPUS",) if k in os.environ)
    command = env + "python " + " ".join(shlex.quote(a) for a in sys.argv)
    section = f"\n## {title} ({now})\n\nMachine: {machine()}\n\nCommand: `{command}`\n\n{body.strip()}\n"
    if not RESULTS.exists():
        RESULTS.write_text("# Benchmark results\n\nSections are appended by the bench scripts; newest last.\n")
    with open(RESULTS, "a") as f:
        f.write(section)
    print(section)


def load() -> str:
    """The 1/5/15-minute load averages: the cores are shared, so every result says how busy they were."""
    return "/".join(f"{x:.1f}" for x in os.getloadavg())
