"""The quarantine: where apply moves deleted tables, and the record restore works from.

  <quarantine>/restore.json           one entry per deleted table (see apply.py)
  <quarantine>/<id>/positions.parquet  B's rows as positions in its container
  <quarantine>/<id>/data/              the moved original (removed by --purge)
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import xxhash

from curate.errors import CurateError

DEFAULT_QUARANTINE = ".curate-quarantine"
_VERSION = 1


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
