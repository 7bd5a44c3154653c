"""Bytes read are reported batch by batch while a task runs, in the file's own bytes (compressed, as
the plan weighs the task), not only when it ends: the stage's bytes read, rate and ETA move
during a long task. Checked on the events themselves (no timing): several per task, each before
the task's done marker exists, adding up to exactly what the plan weighs the task."""

import json
import os

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

from curate import recipe
from curate.engine.run.runner import Reporter, RunOptions, run
from curate.io import file_stream
from curate.stage_progress import task_bytes
from tests.conftest import write_jsonl
from tests.curate.io.wds_shards import sample, write_tar

ROWS = 6000


def _texts() -> list[str]:
    # text that does not compress to nothing, so the compressed file has many blocks to read through
    return [f"document {i} " + os.urandom(40).hex() for i in range(ROWS)]


def _jsonl_gz(d):
    # ISA-L inflates from 512 KB reads of the compressed file: several MB, for several steps
    return write_jsonl(d / "big.jsonl.gz", [{"text": t + os.urandom(300).hex()} for t in _texts()])


def _parquet(d):
    path = d / "big.parquet"
    pq.write_table(pa.table({"text": _texts()}), path, row_group_size=500)
    return path


def _csv(d):
    path = d / "big.csv"
    pcsv.write_csv(pa.table({"text": _texts()}), path)
    return path


def _tar(d):
    members = [m for i in range(300) for m in sample(f"{i:05d}", caption=f"caption {i} " + os.urandom(20).hex())]
    return write_tar(d / "big.tar", members)


# pyarrow's CSV reader reads ahead of the rows it has parsed, on a thread of its own, as far as it
# will (this whole small file at once): its bytes move in those steps, however many they are
@pytest.mark.parametrize("make, steps", [(_jsonl_gz, 4), (_parquet, 4), (_csv, 1), (_tar, 4)],
                         ids=["jsonl.gz", "parquet", "csv", "tar"])
def test_bytes_read_grow_batch_by_batch_before_each_task_ends(tmp_path, monkeypatch, make, steps):
    (tmp_path / "in").mkdir()
    source = make(tmp_path / "in")
    monkeypatch.setattr(file_stream, "CHUNK_BYTES", 32 << 10)  # streams read in many chunks (the tasks run here)
    stages: dict[int, tuple[dict, object]] = {}
    events: list[tuple[int, str, int, bool]] = []  # stage, task, bytes, whether a task was done by then

    def stage(index, tasks, done, written):
        stages[index] = ({t.name: task_bytes(t) for t in tasks}, done)

    def read(index, task, nbytes):
        events.append((index, task, nbytes, any(stages[index][1]())))

    column = "caption" if source.suffix == ".tar" else "text"
    r = recipe.load(text=json.dumps({
        "input": {"path": str(source), "batch_rows": 64, "text_column": column},
        "output": {"path": str(tmp_path / "out")}, "steps": [{"exact_dedup": {}}]}))
    run(r, RunOptions(workers=1), Reporter(stage=stage, read=read))
    assert sorted(stages) == [0, 1]  # the dedup's stage reads the shards of the first
    for index, (weights, _) in stages.items():
        for task, weight in weights.items():
            mine = [(n, early) for i, t, n, early in events if (i, t) == (index, task)]
            assert sum(n for n, _ in mine) == weight, (index, task)  # the plan's weight, in all
            assert len(mine) >= steps and all(n > 0 for n, _ in mine), (index, mine)  # batch by batch
            assert not any(early for _, early in mine), (index, mine)  # all before the task was done
    assert sum(n for i, _, n, _ in events if i == 0) == source.stat().st_size
