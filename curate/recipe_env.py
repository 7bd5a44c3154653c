"""A recipe's values and the environment: `${VAR}` and `${VAR:-default}` expanded (what the run
does), and the copy of the recipe the manifest shows, with the credentials written in it masked."""

from __future__ import annotations

import os
import re
from typing import Any

from curate.errors import RecipeError

_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_env(value: Any, where: str) -> Any:
    if isinstance(value, dict):
        return {k: expand_env(v, f"{where}.{k}" if where else str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_env(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, str) or "${" not in value:
        return value

    def sub(m: re.Match) -> str:
        var, default = m.group(1), m.group(2)
        if var in os.environ:
            return os.environ[var]
        if default is not None:
            return default
        raise RecipeError(where, f"environment variable {var} is not set")

    return _ENV.sub(sub, value)


# A storage option whose value is a credential, by its name (key, secret, token, password, SAS,
# credentials, ...): written in the recipe, it is shown in the manifest as SECRET_SHOWN.
_SECRET_KEY = re.compile(r"key|secret|token|passw|credential|sas|signature|session|auth", re.IGNORECASE)
SECRET_SHOWN = "***"


def without_secrets(display: dict) -> dict:
    """The recipe as the manifest shows it: `input.storage_options` and `output.storage_options`
    credentials written in the recipe itself are masked; a `${VAR}` reference stays (it names the
    variable, not the value)."""
    for side in ("input", "output"):
        options = display[side].get("storage_options") if isinstance(display.get(side), dict) else None
        if isinstance(options, dict):
            display[side]["storage_options"] = _mask(options)
    return display


def _mask(value: Any, key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _mask(v, str(k) if _SECRET_KEY.search(str(k)) else key) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v, key) for v in value]
    if key and not (isinstance(value, str) and _ENV.fullmatch(value.strip())) and value not in (None, ""):
        return SECRET_SHOWN
    return value
