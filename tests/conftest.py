"""Helpers shared by the tests: small corpora on disk and running the CLI in-process."""

from __future__ import annotations

import gzip
import json
import socket
from pathlib import Path

import pytest
from typer.testing import CliRunner

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which puts the group in the test's id
def pytest_collection_modifyitems(config, items):
    """Under `--dist loadgroup`, the tests of a module that use one of its module-scoped fixtures
    (a reference run, a corpus, a server) go to one worker, which builds the fixture once: spread
    over both workers, each built it (seconds to tens of seconds apiece)."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None or item.get_closest_marker("xdist_group"):
            continue
        if any(defs[-1].scope == "module" for defs in info.name2fixturedefs.values()):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))


def write_jsonl(path: Path, rows: list[dict], compress: bool | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    if compress or (compress is None and path.suffix == ".gz"):
        data = gzip.compress(data, mtime=0)
    path.write_bytes(data)
    return path


def free_port() -> int:
    """A TCP port free on loopback now (for servers the tests start: Ray nodes, moto S3)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_recipe(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture
def manifest_at():
    """The manifest a run wrote (RUN_DIR/manifest.json), read through its model as curate reads it."""
    from curate.manifest import read

    def at(run_dir: Path):
        path = Path(run_dir) / "manifest.json"
        return read(path.read_bytes(), str(path))

    return at


@pytest.fixture
def cli():
    """Run `curate ARGS...` in-process; returns the result (exit_code, stdout, stderr)."""
    from curate.cli import app

    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)

    return invoke

