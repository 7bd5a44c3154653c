"""Fixtures for the score tests: tiny models built locally from a config."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_gpt2(tmp_path_factory) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tests.operators.score.tiny_lm import build_tiny_gpt2

    return build_tiny_gpt2(tmp_path_factory.mktemp("models") / "tiny-gpt2")


@pytest.fixture(scope="session")
def tiny_classifier(tmp_path_factory) -> Path:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tests.operators.score.tiny_lm import build_tiny_classifier

    return build_tiny_classifier(tmp_path_factory.mktemp("models") / "tiny-cls", labels=3)
