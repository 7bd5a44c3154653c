"""A test operator that holds `mb` MB (every page written, so that it is resident) while it
processes each batch: a task over a memory limit, for the engines' out-of-memory handling."""

from __future__ import annotations

import pyarrow as pa

from curate.ops import Map, Params


class MemoryHogParams(Params):
    mb: int = 1024


class MemoryHog(Map):
    name = "test_memory_hog"
    Params = MemoryHogParams

    def process(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        held = b"\x01" * (self.params.mb * 2**20)  # written, not just reserved (calloc'd zeros may not be)
        assert len(held) == self.params.mb * 2**20
        return batch
