"""Progress in batch logs (stderr no terminal: nohup, Slurm): a plain line every N seconds with
rows, rate, stage, percent of tasks and ETA; "1 task", not "1 tasks"; the funnel shows counts."""

import io
import re

from rich.console import Console

from curate.io.sources import Source
from curate.stage_progress import StageTracker, plain_line
from curate.words import count
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
    shape = re.compile(r"^progress \d+s: stage \d, \d+/\d+ tasks? \(\d+%\), eta (\d+s|\dm\d\ds|unknown until a "
                       r"task is done); \d\d_\w+: [\d,]+ rows? in \([\d,]+ rows/s\)$")
    assert all(shape.match(line) for line in lines if "rows" in line), lines
    assert any("/4 tasks" in line for line in lines), lines  # whichever stage a tick fell in: 4 tasks each
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
    line = plain_line(65, {"stage": 0, "tasks": 1, "done": 0, "percent": 0.0, "eta": None}, "00_read", 1, 1.0)
    assert line == "progress 1m05s: stage 0, 0/1 task (0%), eta unknown until a task is done; 00_read: 1 row in (1 rows/s)"


def test_the_stage_eta_comes_from_the_bytes_of_the_tasks_done_in_this_run(tmp_path):
    class Task:
        def __init__(self, path):
            self.sources, self.shards = (Source(str(path), "jsonl", path.name),), ()

    paths = []
    for i, size in enumerate((100, 100, 200, 600)):
        paths.append(tmp_path / f"{i}")
        paths[-1].write_bytes(b"x" * size)
    now = [0.0]
    done = [True, False, False, False]  # the first was done before (a resumed run): it says nothing of speed
    tracker = StageTracker(clock=lambda: now[0])
    tracker.start(0, [Task(p) for p in paths], lambda: list(done))
    assert tracker.state()["eta"] is None and tracker.state()["percent"] == 10
    now[0], done[1:3] = 30.0, [True, True]  # 300 bytes in 30 s: 600 left take 60 s
    tracker.poll()
    assert tracker.state() == {"stage": 0, "tasks": 4, "done": 3, "percent": 40.0, "eta": 60.0}


def test_terminal_status_lines_carry_no_source_file_link(tmp_path):
    from curate.engine.runner import RunOptions
    from curate.progress import run_with_progress
    from curate import recipe

    write_jsonl(tmp_path / "in" / "a.jsonl", [{"text": "x"}])
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=200)
    r = recipe.load(text=f"input: {{path: '{tmp_path / 'in' / 'a.jsonl'}'}}\noutput: {{path: '{tmp_path / 'o'}'}}\n")
    run_with_progress(r, RunOptions(workers=1), console)
    out = buf.getvalue()
    assert "stage 0: 1 task on 1 worker" in out and "progress.py" not in out
