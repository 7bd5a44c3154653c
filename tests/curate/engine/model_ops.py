"""A model-backed test operator: it "loads a model" once per worker (a file per load) and frees
it on teardown (a file per close), through curate's `loaded` mechanism, so the tests can count both."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from curate.ops import TEXT, Global, Map, Params, Resources, Value, loaded


class FakeModelParams(Params):
    log_dir: str = Field(..., description="Where setup/teardown leave a file each.")


class _Model:
    def __init__(self, log_dir: str):
        self.log_dir = log_dir
        Path(log_dir, f"setup-{os.getpid()}").touch()

    def close(self) -> None:
        Path(self.log_dir, f"teardown-{os.getpid()}").touch()


class FakeModel(Map):
    """Appends `_score` = text length, in a model worker."""

    name = "fake_model"
    Params = FakeModelParams
    resources = Resources(pool="model")
    requires = (TEXT,)
    provides = ("score",)

    @loaded
    def model(self) -> _Model:
        return _Model(self.params.log_dir)

    def process(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        assert "model" in self.__dict__, "the engine loads the model before the first batch"
        return batch.append_column("score", pc.utf8_length(batch.column(self.text_column)))


class FakeCpuModel(FakeModel):
    """FakeModel on the CPU pool: with one worker its stage runs in the run's own process."""

    name = "fake_cpu_model"
    resources = Resources()


class BatchSize(Map):
    """Appends `batch_size`: the number of rows in the batch each row arrived in."""

    name = "batch_size"
    provides = ("batch_size",)

    def process(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        return batch.append_column("batch_size", pa.array([batch.num_rows] * batch.num_rows, pa.int64()))


class FitBatchSizes(Global):
    """Appends `fit_batch_sizes`: the sizes of the batches its fit was given, in order."""

    name = "fit_batch_sizes"
    provides = ("fit_batch_sizes",)

    def fit(self, batches, workdir, parallel=None) -> Value:
        return Value(",".join(str(batch.num_rows) for batch in batches))

    def apply(self, batch: pa.RecordBatch, state: Value) -> pa.RecordBatch:
        return batch.append_column("fit_batch_sizes", pa.array([state.value] * batch.num_rows, pa.string()))
