"""The framework names no operator and not the lake: curate/ reaches them only through the
entry points their packages register (curate/plugins.py), so either can change or go
without touching the framework. Inside curate/engine/, each part imports only the parts below it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE = ("curate_operators", "curate_lake", "operators", "lake")  # the packages beside curate/ (and their old names)


def _imported(tree: ast.AST):
    """(line, module) of every import, wherever it stands (inside functions too), and of
    importlib.import_module("...") with a literal name."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0:  # relative imports stay inside curate
            yield node.lineno, node.module
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            yield node.lineno, node.args[0].value


def test_nothing_under_curate_imports_an_operator_or_the_lake():
    found = [f"{path.relative_to(ROOT)}:{line}: {module}"
             for path in sorted((ROOT / "curate").rglob("*.py"))
             for line, module in _imported(ast.parse(path.read_text(), filename=str(path)))
             if module.split(".")[0] in OUTSIDE]
    assert found == []


def test_the_check_sees_every_form_of_import():
    code = ("import curate_operators.score\nfrom curate_lake.cli import app\nimport importlib\n"
            "def f():\n    from curate_operators import x\n    importlib.import_module('curate_lake.scan')\n"
            "from . import lake\nimport lakeside\n")
    modules = [m for _, m in _imported(ast.parse(code))]
    assert [m for m in modules if m.split(".")[0] in OUTSIDE] == [
        "curate_operators.score", "curate_lake.cli", "curate_operators", "curate_lake.scan"]


def test_the_distribution_installs_no_generic_top_level_name():
    # operators/ and lake/ install as curate_operators and curate_lake (setup.py): a package
    # named `operators` or `lake` in a user's environment would collide with ours.
    from importlib.metadata import packages_distributions

    ours = sorted(name for name, dists in packages_distributions().items() if "curate" in dists)
    assert ours == ["curate", "curate_lake", "curate_operators"]


# curate/engine/'s parts, lowest first: each imports only from its own part and those below it.
# The engines (local, ray, slurm) stand side by side above work/ and import none of each other;
# the runner (run/) reaches them only through the registry (work/engines.py names them as strings).
ENGINE_LAYERS = (("failpoints", "result"), ("rundir",), ("tasks",), ("work",), ("local", "ray", "slurm"), ("run",))


def _engine_part(module: str) -> str | None:
    """The part of curate/engine/ a module belongs to: `curate.engine.tasks.plan` -> tasks."""
    parts = module.split(".")
    if parts[:2] != ["curate", "engine"] or len(parts) < 3:
        return None
    return parts[2]


def _layer(part: str) -> int:
    return next(i for i, names in enumerate(ENGINE_LAYERS) if part in names)


def _upward(importer: str, imported: list[str]) -> list[str]:
    """The modules `importer` (a curate.engine module) imports from a part above its own, or from
    another engine beside it."""
    own = _engine_part(importer)
    return [m for m in imported
            if (part := _engine_part(m)) is not None and part != own
            and (_layer(part) > _layer(own) or _layer(part) == _layer(own) == _layer("local"))]


def _engine_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) of each curate.engine module a file imports; `from curate.engine import x`
    names the module curate.engine.x."""
    found = [(node.lineno, f"curate.engine.{alias.name}") for node in ast.walk(tree)
             if isinstance(node, ast.ImportFrom) and node.module == "curate.engine" for alias in node.names]
    return found + [(line, module) for line, module in _imported(tree)
                    if module and module.startswith("curate.engine.")]


def test_each_part_of_the_engine_imports_only_downwards():
    engine = ROOT / "curate" / "engine"
    parts = {_engine_part(f"curate.engine.{p.stem}") for p in engine.iterdir() if p.suffix == ".py" or p.is_dir()}
    # a new part takes its place in ENGINE_LAYERS
    assert parts - {"__init__", "__pycache__"} == {name for names in ENGINE_LAYERS for name in names}
    found = [f"{path.relative_to(ROOT)}:{line}: {module}"
             for path in sorted(engine.glob("*/*.py")) + sorted(engine.glob("[!_]*.py"))
             for line, module in _engine_imports(ast.parse(path.read_text(), filename=str(path)))
             if _upward(".".join(path.relative_to(ROOT).with_suffix("").parts), [module])]
    assert found == []


def test_the_engine_layering_check_sees_an_upward_import():
    assert _upward("curate.engine.rundir.layout", ["curate.engine.tasks.plan", "curate.engine.rundir.lease",
                                                   "curate.engine.failpoints"]) == ["curate.engine.tasks.plan"]
    assert _upward("curate.engine.tasks.task", ["curate.engine.run.runner"]) == ["curate.engine.run.runner"]
    assert _upward("curate.engine.local.pool", ["curate.engine.ray.worker", "curate.engine.work.worker"]) == [
        "curate.engine.ray.worker"]  # engines stand beside each other
    assert _upward("curate.engine.slurm.task", ["curate.engine.slurm.batch", "curate.engine.tasks.task"]) == []
    assert _upward("curate.engine.run.runner", ["curate.engine.local.engine"]) == []
    code = "from curate.engine import run\ndef f():\n    from curate.engine.ray.nodes import x\n"
    assert [m for _, m in _engine_imports(ast.parse(code))] == ["curate.engine.run", "curate.engine.ray.nodes"]


# Small files, one concept each (issue 45): no file of curate/, operators/ or lake/ is longer than this.
MAX_LINES = 460


def _over(paths: list[Path], limit: int = MAX_LINES) -> list[tuple[Path, int]]:
    """(path, lines) of each file among `paths` longer than `limit` lines."""
    return [(path, n) for path in paths if (n := len(path.read_text().splitlines())) > limit]


def test_no_file_of_curate_operators_or_lake_is_over_the_line_limit():
    files = [path for top in ("curate", "operators", "lake") for path in sorted((ROOT / top).rglob("*.py"))]
    assert [f"{path.relative_to(ROOT)}: {n} lines" for path, n in _over(files)] == []


def test_the_line_limit_check_sees_a_long_file(tmp_path):
    at_limit, over = tmp_path / "at_limit.py", tmp_path / "over.py"
    at_limit.write_text("x = 1\n" * MAX_LINES)
    over.write_text("x = 1\n" * (MAX_LINES + 1))
    assert _over([at_limit, over]) == [(over, MAX_LINES + 1)]
