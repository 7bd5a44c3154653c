"""A duckdb connection that spills to the operator's workdir past a memory budget."""

from __future__ import annotations

from pathlib import Path

import duckdb

# duckdb cannot run a join or a sort in less (it fails rather than spill): a smaller budget gets this.
FLOOR_MB = 64


def connect(workdir: Path, memory_gb: float, threads: int) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    spill = Path(workdir) / "duckdb_spill"
    spill.mkdir(parents=True, exist_ok=True)
    con.execute(f"SET memory_limit = '{max(FLOOR_MB, int(memory_gb * 1024))}MB'")
    con.execute(f"SET temp_directory = '{spill}'")
    con.execute(f"SET threads = {max(1, threads)}")
    con.execute("SET preserve_insertion_order = false")
    return con
