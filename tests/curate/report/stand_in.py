"""A whole manifest (curate/manifest.py's model) for report tests that need only a few of its
fields: the others are filled in, a step's too."""

from __future__ import annotations

from typing import Any

from curate.manifest import Manifest, build

STEP = {"op": "exact_dedup", "kind": "global", "rows_in": 0, "rows_out": 0, "removed": 0, "seconds": 0.0}


def manifest(steps: list[dict] | None = None, **fields: Any) -> Manifest:
    """`steps`: each step's entry, its missing fields filled in (`{"step": "01_dedup"}` is enough)."""
    return build({"name": "t", "recipe": {}, "recipe_fingerprint": "f", "seed": 0, "rows_in": 0, "rows_out": 0,
                  "steps": [{**STEP, **s} for s in steps or []], "run": {"host": "h", "started_at": "t"},
                  "inputs": [], "versions": {}, "format": "parquet", "data_files": 0, "outputs": [], "seconds": 0.0,
                  **fields})
