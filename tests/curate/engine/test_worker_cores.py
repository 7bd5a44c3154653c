"""A worker process keeps to its share of the cores: Arrow, polars, the numeric libraries and the
tokenizers' rayon pool each use the `threads` it is given."""

import os

import pyarrow as pa

from curate.engine.work.worker import use_cores

THREAD_VARIABLES = ("POLARS_MAX_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS")


def test_use_cores_sizes_every_library_it_names(monkeypatch):
    cpus = pa.cpu_count()
    for name in THREAD_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "3")  # the user's own setting stands
    try:
        use_cores(1)
        assert pa.cpu_count() == 1
        assert {name: os.environ[name] for name in THREAD_VARIABLES} == {
            "POLARS_MAX_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "3", "RAYON_NUM_THREADS": "1"}
    finally:
        pa.set_cpu_count(cpus)
