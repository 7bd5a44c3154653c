"""Which extra of curate (pyproject.toml's optional-dependencies) installs a Python package, so
that an error about a missing one says what to install: `pip install 'curate[embed]'`."""

from __future__ import annotations

import importlib.util

from curate.errors import MissingPackage

# import name -> the extra that installs it (where several do, the one for the operators using it)
EXTRA_OF = {
    "torch": "embed",
    "sentence_transformers": "embed",
    "transformers": "embed",
    "open_clip": "embed",
    "PIL": "embed",
    "faiss": "embed",
    "threadpoolctl": "embed",
    "aiohttp": "llm",
    "pysbd": "llm",
    "ray": "ray",
    "lxml": "adp",
    "py3langid": "web",
    "tokenizers": "web",
    "warcio": "warc",
    "cchardet": "warc",
    "trafilatura": "warc",
    "justext": "warc",
    "lxml_html_clean": "warc",
    "resiliparse": "warc",
    "fsspec": "remote",
    "s3fs": "remote",
    "isal": "remote",
    "datasets": "hf",
    "huggingface_hub": "hub",
    "scipy": "qdc",
    "vendi_score": "qdc",
    "sacrebleu": "qdc",
    "sklearn": "qdc",
    "tree_sitter": "qdc",
    "mkdocs": "docs",
}

# packages no extra installs: import name -> what pip installs
PIP_NAME = {"fasttext": "fasttext-numpy2-wheel"}


def install_hint(module: str) -> str:
    """How to install the package that gives `module` (an import name, dotted or not)."""
    top = module.split(".")[0]
    extra = EXTRA_OF.get(top)
    return f"pip install 'curate[{extra}]'" if extra else f"pip install {PIP_NAME.get(top, top)}"


def missing(error: ModuleNotFoundError, who: str) -> MissingPackage | None:
    """The user's error for `error` (an import that failed because a package is not installed):
    `who` needs it, and which extra installs it; None for a module that is not an optional
    package (curate's own, a typo in a plugin: a bug, not the user's environment)."""
    name = (error.name or "").split(".")[0]
    if name not in EXTRA_OF:
        return None
    return MissingPackage(name, f"{who} needs the Python package {name}, which is not installed: {install_hint(name)}")


def require(modules, who: str) -> None:
    """Raise MissingPackage for the first of `modules` (import names) that is not installed."""
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a parent missing, or None in sys.modules
            found = False
        if not found:
            top = module.split(".")[0]
            raise MissingPackage(
                top, f"{who} needs the Python package {top}, which is not installed: {install_hint(module)}"
            )
