"""The scan cache: table statistics keyed by table fingerprint, and the verdicts of the
expensive steps (content check, verification) keyed by both tables' fingerprints.

A rescan of an unchanged lake then reads no data at all: fingerprints come from file
sizes and mtimes, stats and pair verdicts from here. Entries not used by a scan are
dropped when it saves, so the cache follows the lake instead of growing forever.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson

_VERSION = 2  # 2: CSV columns are text, with the families they parse as


class ScanCache:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._tables: dict[str, dict] = {}
        self._pairs: dict[str, dict] = {}
        self._used_tables: dict[str, dict] = {}
        self._used_pairs: dict[str, dict] = {}
        self.hits = 0
        self.misses = 0
        if self.path.exists():
            try:
                data = orjson.loads(self.path.read_bytes())
            except (orjson.JSONDecodeError, OSError):
                data = {}  # a damaged cache only costs a full scan
            if data.get("version") == _VERSION:
                self._tables = data.get("tables", {})
                self._pairs = data.get("pairs", {})

    def table(self, fingerprint: str) -> dict | None:
        entry = self._tables.get(fingerprint)
        if entry is None:
            self.misses += 1
            return None
        self.hits += 1
        self._used_tables[fingerprint] = entry
        return entry

    def put_table(self, fingerprint: str, entry: dict) -> None:
        self._tables[fingerprint] = self._used_tables[fingerprint] = entry

    def pair(self, key: str) -> dict | None:
        entry = self._pairs.get(key)
        if entry is not None:
            self._used_pairs[key] = entry
        return entry

    def put_pair(self, key: str, entry: dict) -> None:
        self._pairs[key] = self._used_pairs[key] = entry

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_bytes(orjson.dumps({"version": _VERSION, "tables": self._used_tables, "pairs": self._used_pairs}))
        os.replace(tmp, self.path)
