"""Parameters naming local files (models, tokenizers, checkpoints, lists), declared with
`local_path`, so a path that does not exist is refused before any worker starts (preflight), not
when a worker first loads it.

A model or tokenizer parameter (`hub=True`) also takes a Hugging Face hub id, looked up in the
local cache when the model loads: `name` or `org/name` of letters, digits, `-`, `_`, `.`. Any
other value is a path: it starts with `/`, `./`, `../` or `~`, ends in a file extension (.json,
.bin, .pt, ...), or has more than one `/`. A value that exists is a path, whatever its form; a
value with a scheme (`hf-hub:org/name`) is neither and is left to the operator.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

from pydantic import BaseModel, Field

_HUB_ID = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9._-]*/)?[A-Za-z0-9][A-Za-z0-9._-]*$")
_PATH_SUFFIXES = (".json", ".bin", ".pt", ".pth", ".safetensors", ".onnx", ".ftz", ".model", ".txt")
_PATH_PREFIXES = ("/", "./", "../", "~", ".\\")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")  # two letters at least: C:\ is a Windows path


def local_path(
    default: Any = ..., description: str | None = None, *, hub: bool, unless: dict[str, Any] | None = None, **field: Any
) -> Any:
    """A Params field naming a local file or folder; `hub`: a Hugging Face hub id is accepted
    too. `unless`: sibling field values under which the field names no local path (an LLM's
    `model` with `backend: openai` is the endpoint's model name)."""
    extra: dict[str, Any] = {"local_path": "hub" if hub else "file"}
    if unless:
        extra["unless"] = unless
    return Field(default, description=description, json_schema_extra=extra, **field)


def path_reason(name: str) -> str | None:
    """Why `name` reads as a local path rather than a hub id (words for a message), or None."""
    prefix = next((p for p in _PATH_PREFIXES if name.startswith(p)), None)
    if prefix:
        return f"it starts with {prefix}"
    if name.lower().endswith(_PATH_SUFFIXES):
        return "it ends in a file extension"
    if "\\" in name or name.count("/") > 1:
        return "it has more than one /"
    if not _HUB_ID.match(name):
        return "it is not a hub id (org/name of letters, digits, '-', '_', '.')"
    return None


def looks_like_path(name: str) -> bool:
    return path_reason(name) is not None


def missing_paths(params: BaseModel) -> Iterator[tuple[str, str]]:
    """(place under `params`, e.g. `model` or `block.domains`; message) for each `local_path`
    field, nested parameter models included, naming a path that does not exist."""
    for name, field in type(params).model_fields.items():
        value, key = getattr(params, name), field.alias or name
        if isinstance(value, BaseModel):
            yield from ((f"{key}.{loc}", message) for loc, message in missing_paths(value))
            continue
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        kind = extra.get("local_path")
        unless = extra.get("unless")
        if kind is None or not isinstance(value, str) or not value:
            continue
        if isinstance(unless, dict) and unless and all(getattr(params, k) == v for k, v in unless.items()):
            continue
        path = Path(value).expanduser()
        if path.exists() or (kind == "hub" and (_SCHEME.match(value) or not looks_like_path(value))):
            continue
        message = f"{value} does not exist ({path.resolve()})"
        if kind == "hub":
            message += (
                f"; it is taken as a local path because {path_reason(value)} (a Hugging Face hub id, "
                f"org/name, would be looked up in the local cache instead)"
            )
        yield key, message
