"""What packages register with curate, through entry points, so the framework names none of them.

  curate.operators   name = "module:Class"   an operator (curate's own are in its pyproject.toml)
  curate.commands    name = "module:app"     a command group, `curate NAME ...` (a Typer app)

Entry points are package metadata: they appear when the package is installed (`pip install -e .`
for a checkout), and are read here without importing what they name.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

OPERATORS = "curate.operators"
COMMANDS = "curate.commands"
_OWN = "curate"


@lru_cache(maxsize=None)
def registered(group: str) -> dict[str, EntryPoint]:
    """The entry points of `group` by name. Where two packages register one name, curate's own
    registration wins (a plugin cannot replace a built-in by reusing its name), else the first found."""
    from importlib.metadata import entry_points

    # sorted is stable: curate's own first, the others in sys.path order
    found = sorted(entry_points(group=group), key=lambda ep: ep.dist is None or ep.dist.name != _OWN)
    by_name: dict[str, EntryPoint] = {}
    for ep in found:
        by_name.setdefault(ep.name, ep)
    return by_name


def origin(ep: EntryPoint) -> str:
    """`curate_lake.cli:app (registered by curate 0.1.0)`: where an entry point comes from, for messages."""
    who = f"{ep.dist.name} {ep.dist.version}" if ep.dist is not None else "an unknown package"
    return f"{ep.value} (registered by {who})"
