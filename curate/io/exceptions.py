"""Exception classes of the optional libraries under fsspec (botocore, aiohttp, ...), those installed:
what store.py and retries.py catch by name without importing a store's package for a local run."""

from __future__ import annotations


def installed(
    always: list[type[BaseException]], optional: tuple[tuple[str, tuple[str, ...]], ...]
) -> tuple[type[BaseException], ...]:
    """`always`, and each (module, class names) of `optional` whose module imports."""
    found = list(always)
    for module, names in optional:
        try:
            imported = __import__(module, fromlist=list(names))
        except ImportError:
            continue
        found += [getattr(imported, n) for n in names if hasattr(imported, n)]
    return tuple(found)
