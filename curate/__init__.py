"""curate: data-curation pipelines for training data.

The Python API (curate/api.py, api_recipe.py, api_run.py), loaded on first use so that `import
curate` and `curate --help` stay fast (no pyarrow, polars or engine at import):

    curate.run(recipe, input=..., output=..., set={...}, workers=..., resume=..., overwrite=...) -> curate.Run
    curate.Recipe.load(path) / .from_yaml(text) / .from_dict(doc); .set(key, value), .validate(), .to_yaml()
    curate.ops.names(), curate.ops.describe(name): the operator catalog
    curate.open_run(path): a finished run directory
"""

__version__ = "0.1.0"

# name -> module that defines it; `ops` is the submodule curate/ops.py itself (the operator
# contract, with the catalog's names() and describe()).
_LAZY = {
    "run": "curate.api",
    "Run": "curate.api_run",
    "Recipe": "curate.api_recipe",
    "open_run": "curate.api",
    "CurateWarning": "curate.api",
    "CurateError": "curate.errors",
    "RecipeError": "curate.errors",
    "ops": None,
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'curate' has no attribute {name!r}")
    import importlib

    module = _LAZY[name]
    if module is None:
        return importlib.import_module(f"curate.{name}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # found once; later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
