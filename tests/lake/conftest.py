"""Fixtures of the lake tests: one generated lake per session (tests that change it copy it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lake.lake_testkit import make_lake


@pytest.fixture(scope="session")
def lake_root(tmp_path_factory) -> Path:
    return make_lake(tmp_path_factory.mktemp("lake") / "lake")
