"""The report's memory: its Arrow reads on the C library's malloc, not on mimalloc."""

import shutil

import pyarrow as pa
import pytest

from curate.report import report


def test_the_report_reads_on_the_system_pool_and_gives_the_pool_before_back(small_dir, tmp_path, monkeypatch):
    """mimalloc (pyarrow's default pool) kept the pages of the sample rows the report decodes,
    so its peak grew with a trace's rows (issue 47): the report's reads allocate from the
    system pool, and the process's default pool is the one before once it is written."""
    run_dir = tmp_path / "run"
    shutil.copytree(small_dir, run_dir)
    pools: list[str] = []
    rows_at = report.rows_at

    def reading(*args, **kwargs):
        pools.append(pa.default_memory_pool().backend_name)
        return rows_at(*args, **kwargs)

    monkeypatch.setattr(report, "rows_at", reading)
    before = pa.default_memory_pool()
    if before.backend_name == "system":  # ARROW_DEFAULT_MEMORY_POOL=system: nothing to show
        pytest.skip("pyarrow's default pool is the system's here")
    report.write_report(run_dir)
    assert pools and set(pools) == {"system"}
    assert pa.default_memory_pool().backend_name == before.backend_name


def test_the_report_decodes_its_rows_on_its_own_thread(small_dir, tmp_path, monkeypatch):
    """Arrow's decoding on its pool of threads left each thread's malloc arena holding what it had
    decoded: the report's peak grew with the traces' rows (issue 47). Every batch of rows the
    report reads (samples, kept and removed rows) is decoded on the calling thread."""
    import pyarrow.parquet as pq

    run_dir = tmp_path / "run"
    shutil.copytree(small_dir, run_dir)
    threaded: list[bool] = []
    real = pq.ParquetFile.iter_batches

    def recording(self, *args, **kwargs):
        threaded.append(kwargs.get("use_threads", True))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", recording)
    report.write_report(run_dir)
    assert len(threaded) >= 3 and not any(threaded)
