"""Publishing a run: where its traces are merged."""

from curate import trace
from curate.engine.run.runner import RunOptions, run
from tests.curate.engine.test_runner import corpus, load


def test_the_traces_are_merged_in_the_workers_not_in_the_runs_driver(tmp_path, monkeypatch):
    """A step's trace merge holds a row group of its removed rows (up to MERGED_GROUP_BYTES) and
    the writer's buffers: in the run's driver that grew its memory with the traced rows (issue
    47: fineweb on 1,000 WARC files, +10 MB). With workers, the driver merges none (here a merge
    there fails), and the trace files are the bytes one process writes."""
    inp = corpus(tmp_path / "in", files=4)
    run(load(inp, tmp_path / "one"), RunOptions(workers=1))

    def held_here(self, table):
        raise AssertionError("a trace merged in the run's driver")

    monkeypatch.setattr(trace._Group, "add", held_here)
    run(load(inp, tmp_path / "two"), RunOptions(workers=2))
    names = sorted(p.name for p in (tmp_path / "one" / "trace").iterdir())
    assert names == ["01_sql_filter.parquet", "02_exact_dedup.parquet"]
    for name in names:
        assert (tmp_path / "one" / "trace" / name).read_bytes() == (tmp_path / "two" / "trace" / name).read_bytes()
