"""The generated documentation is current: docs/gen_reference.py, run again into a temporary
directory, writes exactly the committed pages; and they cover every operator of the catalog,
every recipe key and every command. `mkdocs build --strict` builds the site without a warning."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def generator():
    spec = importlib.util.spec_from_file_location("gen_reference", DOCS / "gen_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("docs")
    generator().main(["--out", str(out)])
    return {str(p.relative_to(out)): p.read_text(encoding="utf-8") for p in sorted(out.rglob("*.md"))}


def test_the_committed_pages_are_what_the_generator_writes(generated):
    stale = [name for name, text in generated.items()
             if not (DOCS / name).is_file() or (DOCS / name).read_text(encoding="utf-8") != text]
    assert not stale, f"out of date: {', '.join(stale)}; run `python docs/gen_reference.py` and commit the pages"
    # a page the generator no longer writes (reference/manifest.md once written, say) must go too
    committed = {str(p.relative_to(DOCS)) for p in (DOCS / "reference").glob("*.md")}
    assert committed <= set(generated), f"left over: {sorted(committed - set(generated))}"


def test_every_operator_of_the_catalog_has_its_entry(generated):
    from curate import registry

    page = generated["reference/operators.md"]
    sections = set(re.findall(r"^## (\S+)$", page, re.M))
    assert sections == set(registry.catalog())
    for name in registry.catalog():  # and its row in the index table, linking to it
        assert f"| [`{name}`](#{name}) |" in page


def test_every_recipe_key_is_documented(generated):
    from pydantic import BaseModel

    from curate import recipe, recipe_specs

    page = generated["reference/recipe.md"]
    for key in recipe._TOP_LEVEL:
        assert f"| `{key}` |" in page.split("## Top level")[1].split("\n## ")[0], key
    sections = generator().recipe_sections()
    models = {cls for name, cls in vars(recipe_specs).items()
              if name.endswith("Spec") and isinstance(cls, type) and issubclass(cls, BaseModel)}
    assert models <= set(sections.values()), f"a recipe section's model the reference misses: {models - set(sections.values())}"
    assert {"input", "output", "output.pack", "metrics", "report"} <= set(sections)
    for section, model in sections.items():
        table = page.split(f"\n## {section}\n")[1].split("\n## ")[0]
        for field in model.model_fields:
            assert f"| `{field}` |" in table, f"{section}.{field}"


def test_every_command_is_documented(generated):
    import typer
    from typer._click import Context

    from curate.cli import app

    root = typer.main.get_command(app)
    ctx = Context(root, info_name="curate")
    page = generated["reference/cli.md"]
    for name in root.list_commands(ctx):
        assert f"## curate {name}\n" in page, name


def test_the_benchmarks_page_carries_the_headline_table(generated):
    """RESULTS.md's first key figure, cell for cell (its links to RESULTS.md's sections left out)."""
    import re

    def cells(row: str) -> list[str]:
        return [re.sub(r"\[([^\]]+)\]\(#[\w-]+\)", r"\1", c.strip()) for c in row.strip()[1:-1].split(" | ")]

    results = (ROOT / "bench" / "RESULTS.md").read_text(encoding="utf-8")
    first = cells(results.split("<!-- headlines:start -->\n")[1].splitlines()[2])
    page = generated["benchmarks.md"].split("## Headline figures")[1]
    assert first in [cells(line) for line in page.splitlines() if line.startswith("| ")]


def test_the_site_builds_without_a_warning(tmp_path):
    mkdocs = Path(sys.executable).with_name("mkdocs")
    if not mkdocs.exists() and shutil.which("mkdocs") is None:
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]')")
    done = subprocess.run([str(mkdocs) if mkdocs.exists() else "mkdocs", "build", "--strict", "-q", "-d",
                           str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True,
                          env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "reference" / "operators" / "index.html").is_file()
