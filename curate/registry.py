"""Operator names -> classes, imported only when used so `curate --help` stays fast.

The built-in catalog lives in `operators/__init__.py` as "name": "module:Class"; other
packages add operators through the `curate.operators` entry-point group.
"""

from __future__ import annotations

import difflib
import importlib
from functools import lru_cache

from curate.errors import RecipeError
from curate.ops import Operator


@lru_cache(maxsize=1)
def catalog() -> dict[str, str]:
    from importlib.metadata import entry_points

    from operators import CATALOG

    names = dict(CATALOG)
    for ep in entry_points(group="curate.operators"):
        names.setdefault(ep.name, ep.value)
    return names


def names() -> list[str]:
    return sorted(catalog())


def get(name: str, where: str = "") -> type[Operator]:
    """The operator class called `name`; an unknown name is a RecipeError suggesting close ones."""
    target = catalog().get(name)
    if target is None:
        close = difflib.get_close_matches(name, names(), n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else " Run `curate ops` to list them."
        raise RecipeError(where, f"unknown operator '{name}'.{hint}")
    module, _, attr = target.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    if cls.name != name:
        raise TypeError(f"catalog entry {name!r} points at {target}, whose name is {cls.name!r}")
    return cls
