"""The framework names no operator and not the lake: curate/ reaches them only through the
entry points their packages register (curate/plugins.py), so either can change or go
without touching the framework."""

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
