"""Progress in batch logs (stderr no terminal: nohup, Slurm): a plain line every N seconds with
rows, rate, stage, percent of tasks, ETA, bytes read (of the plan's sizes) and their rate, bytes
written; "1 task", not "1 tasks"; the funnel shows counts."""

import io
import re

from rich.console import Console

from curate.io.sources import Source
from curate.stage_progress import StageTracker, plain_line
from curate.words import count
from curate.words import size as size_text
from tests.conftest import write_jsonl


def test_a_batch_log_gets_plain_progress_lines_with_every_field(cli, tmp_path, monkeypatch):
    for i in range(4):
        write_jsonl(tmp_path / "in" / f"{i}.jsonl", [{"text": f"row {i} {j} " * 20} for j in range(300)])
    r = tmp_path / "r.yaml"
    r.write_text(f"input: {{path: '{tmp_path / 'in' / '*.jsonl'}'}}\noutput: {{path: '{tmp_path / 'out'}'}}\n"
                 f"steps:\n  - token_count: {{tokenizer: {_tokenizer(tmp_path)}}}\n  - exact_dedup: {{}}\n")
    monkeypatch.setenv("CURATE_PROGRESS_SECONDS", "0.1")  # the env var; --progress-seconds is the option
    res = cli("run", r, "-w", "1", "--no-report")
    assert res.exit_code == 0, res.output
    lines = [line for line in res.stderr.splitlines() if line.startswith("progress ")]
    assert lines, res.stderr
    size = r"\d+(\.\d)? [KMGT]?B"
    shape = re.compile(r"^progress \d+s: stage \d, \d+/\d+ tasks? \(\d+%\), eta (\d+s|\dm\d\ds|unknown until "
                       rf"bytes are read), read {size} of {size}( \({size}/s\))?, written {size}; "
                       r"\d\d_\w+: [\d,]+ rows? in \([\d,]+ rows/s\)$")
    fitting = re.compile(r"^progress \d+s: stage 1, fitting 02_exact_dedup for \d+s$")
    assert all((fitting if ", fitting " in line else shape).match(line) for line in lines if "rows" in line or ", fitting " in line), lines
    assert "/4 tasks (" in lines[-1], lines  # however short the run, the log closes with a progress line
    inputs = sum(f.stat().st_size for f in (tmp_path / "in").iterdir())
    assert any(f" of {size_text(inputs)}" in line for line in lines if "stage 0" in line), lines  # the plan's sizes
    assert re.search(r"read (\S+ \S+) of \1 \(", lines[-1]) and "written 0 B" not in lines[-1], lines  # all read
    assert "progress.py" not in res.stderr and "1 tasks" not in res.output
    funnel = res.stdout
    assert "top reasons; counts" in funnel and re.search(r"tokens [\d,]+", funnel), funnel  # the step's counts


def _tokenizer(tmp_path) -> str:
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({"[UNK]": 0, "row": 1}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    path = tmp_path / "tokenizer.json"
    tok.save(str(path))
    return str(path)


def test_one_is_singular_everywhere_else_plural():
    assert [count(n, "task") for n in (0, 1, 2, 1000)] == ["0 tasks", "1 task", "2 tasks", "1,000 tasks"]
    stage = {"stage": 0, "tasks": 1, "done": 0, "percent": 0.0, "eta": None, "bytes": 3 << 30, "read": 0,
             "rate": None, "written": 0}
    line = plain_line(65, stage, "00_read", 1, 1.0)
    assert line == ("progress 1m05s: stage 0, 0/1 task (0%), eta unknown until bytes are read, read 0 B of 3.0 GB, "
                    "written 0 B; 00_read: 1 row in (1 rows/s)")
    stage.update(done=1, percent=100.0, eta=0.0, read=3 << 30, rate=(3 << 30) / 65, written=1536 << 20)
    assert plain_line(65, stage, None, 0, 0.0) == ("progress 1m05s: stage 0, 1/1 task (100%), eta 0s, read 3.0 GB of "
                                                   "3.0 GB (47.3 MB/s), written 1.5 GB")


def test_the_stage_eta_and_rate_come_from_the_bytes_of_the_tasks_done_in_this_run(tmp_path):
    class Task:
        def __init__(self, path):
            self.sources, self.shards, self.name = (Source(str(path), "jsonl", path.name),), (), path.name

    paths = []
    for i, size in enumerate((100, 100, 200, 600)):
        paths.append(tmp_path / f"{i}")
        paths[-1].write_bytes(b"x" * size)
    now = [0.0]
    done = [True, False, False, False]  # the first was done before (a resumed run): it says nothing of speed
    written = [0]
    tracker = StageTracker(clock=lambda: now[0])
    tracker.start(0, [Task(p) for p in paths], lambda: list(done), lambda: written[0])
    assert tracker.state()["eta"] is None and tracker.state()["percent"] == 10
    now[0], done[1:3], written[0] = 30.0, [True, True], 250  # 300 bytes in 30 s: 600 left take 60 s
    tracker.poll()
    assert tracker.state() == {"stage": 0, "tasks": 4, "done": 3, "percent": 40.0, "eta": 60.0,
                               "bytes": 1000, "read": 400, "rate": 10.0, "written": 250}
    # the last task, running, has read 300 of its 600 bytes: 600 in 30 s, 300 left take 15 s
    tracker.read(0, "3", 300)
    tracker.read(1, "3", 10 ** 6)  # another stage's task of that name: not this one
    assert tracker.state() == {"stage": 0, "tasks": 4, "done": 3, "percent": 70.0, "eta": 15.0,
                               "bytes": 1000, "read": 700, "rate": 20.0, "written": 250}
    tracker.read(0, "3", 10 ** 6)  # more than the plan's size (a file grown since): the size, at most
    assert tracker.state()["read"] == 1000 and tracker.state()["eta"] == 0.0
    done[3] = True
    tracker.poll()
    assert tracker.state()["read"] == 1000 and tracker.state()["percent"] == 100.0


def test_terminal_status_lines_carry_no_source_file_link_and_the_bars_end_complete(tmp_path):
    from curate.engine.run.runner import RunOptions
    from curate.progress import run_with_progress
    from curate import recipe

    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": "x"}])
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=200)
    r = recipe.load(text=f"input: {{path: '{tmp_path / 'in' / 'a.jsonl'}'}}\noutput: {{path: '{tmp_path / 'o'}'}}\n")
    run_with_progress(r, RunOptions(workers=1), console)
    out = buf.getvalue()
    assert "stage 0: 1 task on 1 worker" in out and "progress.py" not in out
    last = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out).replace("\r", "\n").splitlines()[-1]
    # the stage's bar ends complete, with its bytes, however short the run
    assert re.search(r"stage 0 .* 100% 1/1 task, read (\S+ \S+) of \1 \(.*/s\), written [1-9]", last), last


def test_while_a_global_step_fits_the_line_says_so_not_the_stage_before(tmp_path):
    """Minutes of a fit at scale: the log names the step fitting and for how long, where it
    showed the finished stage's falling rate."""
    class Task:
        def __init__(self, path):
            self.sources, self.shards, self.name = (Source(str(path), "jsonl", path.name),), (), path.name

    (tmp_path / "a").write_bytes(b"x" * 100)
    now = [0.0]
    tracker = StageTracker(clock=lambda: now[0])
    tracker.start(0, [Task(tmp_path / "a")], lambda: [True], lambda: 50)
    now[0] = 10.0
    tracker.fitting(1, "02_exact_dedup")
    now[0] = 75.0
    state = tracker.state()
    assert state == {"stage": 1, "fitting": "02_exact_dedup", "seconds": 65.0}
    assert plain_line(80, state, "01_normalize_text", 10, 1.0) == (
        "progress 1m20s: stage 1, fitting 02_exact_dedup for 1m05s")
    tracker.start(1, [Task(tmp_path / "a")], lambda: [False], lambda: 0)  # the stage's tasks start: its figures again
    assert tracker.state()["tasks"] == 1 and "fitting" not in tracker.state()


def test_a_batch_log_names_the_fit_between_stages(cli, tmp_path, monkeypatch):
    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": f"row {j % 50}"} for j in range(200)])
    r = tmp_path / "r.yaml"
    r.write_text(f"input: {{path: '{tmp_path / 'in' / '*.jsonl'}'}}\noutput: {{path: '{tmp_path / 'out'}'}}\n"
                 f"steps:\n  - exact_dedup: {{}}\n")
    monkeypatch.setenv("CURATE_PROGRESS_SECONDS", "0.1")
    res = cli("run", r, "-w", "1", "--no-report")
    assert res.exit_code == 0, res.output
    assert "stage 1: fitting 01_exact_dedup" in res.stderr, res.stderr
