"""The framework names no operator and not the lake: curate/ reaches them only through the
entry points their packages register (curate/plugins.py), so either can change or go
without touching the framework."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUTSIDE = ("operators", "lake")  # top-level packages beside curate/


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
    code = ("import operators.score\nfrom lake.cli import app\nimport importlib\n"
            "def f():\n    from operators import x\n    importlib.import_module('lake.scan')\n"
            "from . import lake\nimport lakeside\n")
    modules = [m for _, m in _imported(ast.parse(code))]
    assert [m for m in modules if m.split(".")[0] in OUTSIDE] == ["operators.score", "lake.cli", "operators", "lake.scan"]
