"""Where a model's files are: a local path, or a Hugging Face hub id already in the local cache.

Nothing is ever downloaded: the offline flags are set before any Hugging Face code loads, hub ids
are looked up with `local_files_only`, and a model that is not here is a CurateError naming it,
what was tried and how to fix it (the CLI prints it and exits 2).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from curate.errors import CurateError
from curate.paths import looks_like_path


def set_offline() -> None:
    """Hugging Face libraries must not reach the network: set their offline flags (also in a
    huggingface_hub that was already imported, which read them at import)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:
        constants.HF_HUB_OFFLINE = True


def hub_cache_dir() -> str:
    try:
        from huggingface_hub import constants

        return str(constants.HF_HUB_CACHE)
    except ImportError:
        return os.path.join(os.environ.get("HF_HOME", "~/.cache/huggingface"), "hub")


def cached_snapshot(repo_id: str) -> Path | None:
    """The local snapshot folder of `repo_id` in the hub cache, or None (never downloads)."""
    set_offline()
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    try:
        return Path(snapshot_download(repo_id, local_files_only=True))
    except Exception:  # noqa: BLE001: not cached, not a valid id, an incomplete snapshot: all "not here"
        return None


def local_model(name: str, backend: str, extra_ids: tuple[str, ...] = ()) -> Path:
    """The folder (or file) holding model `name`: the path itself if it exists, else the cached
    snapshot of the hub id `name` (or of one of `extra_ids`). Raises CurateError if neither."""
    path = Path(name).expanduser()
    if path.exists():
        return path.resolve()
    if looks_like_path(name):
        raise CurateError(f"embed: model '{name}' not found: it is a local path ({path.resolve()}) that does not "
                          f"exist. Give the folder holding the model's files (config and weights)")
    ids = (name, *[i for i in extra_ids if i != name])
    for repo_id in ids:
        snapshot = cached_snapshot(repo_id)
        if snapshot is not None:
            return snapshot
    tried = " or ".join(f"'{i}'" for i in ids)
    raise CurateError(
        f"embed: model '{name}' ({backend}) is not on this machine: there is no local path '{name}', and the "
        f"Hugging Face cache ({hub_cache_dir()}) holds no {tried}. Models are never downloaded during a run "
        f"(offline): fetch it beforehand where there is network (`huggingface-cli download {ids[0]}`, with "
        f"HF_HOME set to the cache this machine reads), or copy the model's folder here and give its path "
        f"as `model:`")
