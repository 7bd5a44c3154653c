"""The registry of engines (curate/engine/work/engines.py): a new engine joins it without
touching the runner, and `curate run --engine` lists and checks what it holds."""

import ast
import hashlib
from pathlib import Path

import pytest
import typer

from curate.cli import app
from curate.engine.local.engine import LocalEngine
from curate.engine.run.runner import RunOptions, run
from curate.engine.work import engines
from curate.errors import CurateError
from tests.curate.engine.test_runner import corpus, load

RUNNER = sorted((Path(engines.__file__).parents[1] / "run").glob("*.py"))  # the runner's modules


class CountingEngine(LocalEngine):
    """The local engine under another name, counting the engines made."""

    made: list[engines.EngineConfig] = []

    @classmethod
    def from_config(cls, config):
        cls.made.append(config)
        return super().from_config(config)


def _digest(out: Path) -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((out / "data").glob("*.parquet"))]


def test_a_registered_engine_runs_a_recipe_without_touching_the_runner(tmp_path, monkeypatch):
    monkeypatch.setitem(engines.ENGINES, "counting",
                        engines.Registered(f"{__name__}:CountingEngine", "the local engine, counted"))
    monkeypatch.setattr(CountingEngine, "made", [])
    inp = corpus(tmp_path / "in")
    run(load(inp, tmp_path / "local"), RunOptions(workers=2))
    run(load(inp, tmp_path / "counted"), RunOptions(workers=2, engine="counting"))
    assert len(CountingEngine.made) == 1 and CountingEngine.made[0].layout.root == str(tmp_path / "counted")
    assert _digest(tmp_path / "counted") == _digest(tmp_path / "local")


def test_the_runner_never_compares_the_engines_name():
    names = set(engines.ENGINES)
    compared = [f"{path.name}:{node.lineno}" for path in RUNNER for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(node, ast.Compare)
                and any(isinstance(c, ast.Constant) and c.value in names for c in [node.left, *node.comparators])]
    assert compared == []


def test_the_command_lists_and_checks_the_registered_engines(cli):
    engine = next(p for p in typer.main.get_command(app).commands["run"].params if p.name == "engine")
    assert engine.help == f"What runs the tasks: {engines.described().replace('[', chr(92) + '[')}."
    assert all(f"{name} (" in engine.help for name in engines.ENGINES)
    res = cli("run", Path(__file__).parents[3] / "recipes" / "quickstart.yaml", "--engine", "spark")
    assert res.exit_code == 2 and "choose one of local, ray, slurm" in res.output


def test_an_engine_name_is_registered_once():
    with pytest.raises(CurateError, match="registered already"):
        engines.register("local", engines.Registered("elsewhere:Engine", "another"))
    engines.register("local", engines.ENGINES["local"])  # the same registration again changes nothing
    with pytest.raises(CurateError, match="--address is for --engine ray"):
        engines.check("local", "127.0.0.1:6379")
