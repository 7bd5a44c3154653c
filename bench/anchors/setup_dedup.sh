#!/usr/bin/env bash
# Creates bench/.venvs/dedup with the MinHash anchors the dedup benches compare against:
# datatrove (HF's MinHash pipeline) and text-dedup (ChenghaoMou's MinHash), both from PyPI.
# The venv also gets what the bench drivers import from curate (so one interpreter runs both).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"  # bench/
venv="$here/.venvs/dedup"
python3 -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
"$venv/bin/pip" install -q "datatrove[processing]" spacy orjson text-dedup pyarrow polars duckdb numpy pydantic pyyaml xxhash psutil
"$venv/bin/python" - <<'PY'
import importlib.metadata as md
for name in ("datatrove", "text-dedup"):
    print(name, md.version(name))
PY
