"""The quarantine: where apply moves deleted tables, and the record restore works from.

  <quarantine>/restore.json           one entry per deleted table (see apply.py)
  <quarantine>/<id>/positions.parquet  B's rows as positions in its container
  <quarantine>/<id>/data/              the moved original (removed by --purge)

By default it lies beside the scan output the plan came from, not in the working directory.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import xxhash

from curate.errors import CurateError

_VERSION = 1


def default_quarantine(scan_dir: str | Path) -> Path:
    """`<parent>/.<scan>.quarantine` beside the scan directory: one per scan (a record is keyed
    by table name), outside it (deleting a scan keeps what restore needs), and hidden, so a
    later scan of a lake that holds it does not take the quarantined tables for tables."""
    scan_dir = Path(scan_dir)
    return scan_dir.parent / f".{scan_dir.name}.quarantine"


class Quarantine:
    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.manifest = self.root / "restore.json"

    def entries(self) -> dict[str, dict]:
        if not self.manifest.exists():
            return {}
        try:
            data = orjson.loads(self.manifest.read_bytes())
        except (OSError, orjson.JSONDecodeError) as e:
            raise CurateError(f"{self.manifest}: unreadable quarantine record ({e})") from e
        return data.get("tables", {})

    def save(self, entries: dict[str, dict]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.manifest.with_name("restore.json.tmp")
        tmp.write_bytes(orjson.dumps({"version": _VERSION, "tables": entries}, option=orjson.OPT_INDENT_2))
        os.replace(tmp, self.manifest)

    def slot(self, table_path: str) -> Path:
        """The directory that holds one deleted table's positions and moved data."""
        return self.root / xxhash.xxh64_hexdigest(table_path.encode())
