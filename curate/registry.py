"""Operator names -> classes, imported only when used so `curate --help` stays fast.

Every operator is registered through the `curate.operators` entry-point group as
name = "module:Class": curate's own in its pyproject.toml, others by their packages.
"""

from __future__ import annotations

import difflib
import importlib
from functools import lru_cache

from curate import plugins
from curate.errors import CurateError, RecipeError
from curate.ops import Operator


@lru_cache(maxsize=1)
def catalog() -> dict[str, str]:
    """name -> "module:Class" of every registered operator (tests add theirs to this dict)."""
    names = {name: ep.value for name, ep in plugins.registered(plugins.OPERATORS).items()}
    if not names:
        # curate registers dozens itself: none means its package metadata is missing or stale
        raise CurateError(
            f"no operators are registered (entry-point group {plugins.OPERATORS}); "
            "install curate with `pip install -e .` (again, after pyproject.toml changed)"
        )
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
    try:
        imported = importlib.import_module(module)
    except ModuleNotFoundError as e:  # an optional package its module imports: say which extra
        from curate.extras import missing

        raise (missing(e, f"operator {name}") or e) from None
    cls = getattr(imported, attr)
    if cls.name != name:
        raise TypeError(f"catalog entry {name!r} points at {target}, whose name is {cls.name!r}")
    return cls
