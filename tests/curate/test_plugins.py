"""Operators and command groups reach curate through entry points: curate's own as any package's,
loaded only when used; a broken registration is reported, not a traceback."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from curate import cli, plugins, registry
from curate.errors import CurateError, RecipeError

ROOT = Path(__file__).resolve().parents[2]


def _clear_caches():
    plugins.registered.cache_clear()
    registry.catalog.cache_clear()
    cli._command_group.cache_clear()


@pytest.fixture
def package(tmp_path, monkeypatch):
    """Install a package into sys.path for the test: a module and its entry points (as a dist-info)."""

    def install(entry_points: str, module: str = "") -> None:
        info = tmp_path / "curate_test_plugin-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: curate-test-plugin\nVersion: 1.0\n")
        (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
        if module:
            (tmp_path / "curate_test_plugin.py").write_text(textwrap.dedent(module))
        monkeypatch.syspath_prepend(str(tmp_path))
        _clear_caches()

    yield install
    _clear_caches()  # before the next test: sys.path loses the package when monkeypatch undoes it


def test_the_built_in_operators_and_groups_are_registered_as_in_pyproject():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    assert registry.catalog() == declared[plugins.OPERATORS]
    assert {name: ep.value for name, ep in plugins.registered(plugins.COMMANDS).items()} == {
        "adp": "curate_operators.agent.cli:app", "lake": "curate_lake.cli:app",
        "prompts": "curate_operators.synth.cli:app"} == declared[plugins.COMMANDS]
    for name in registry.names():  # every entry names its operator's class
        try:
            assert registry.get(name).name == name
        except ImportError:  # an optional extra not installed here
            continue


def test_an_unknown_operator_suggests_close_names():
    with pytest.raises(RecipeError, match="unknown operator 'exact_dedupe'. Did you mean exact_dedup"):
        registry.get("exact_dedupe", "steps[0]")


def test_no_registered_operators_says_to_install(monkeypatch):
    registry.catalog.cache_clear()
    monkeypatch.setattr(plugins, "registered", lambda group: {})
    with pytest.raises(CurateError, match=r"no operators are registered .*pip install -e \."):
        registry.catalog()
    registry.catalog.cache_clear()


def test_command_groups_run_through_their_entry_points(cli):
    for group, word in (("adp", "convert"), ("lake", "restore")):
        res = cli(group, "--help")
        assert res.exit_code == 0 and f" {group} [OPTIONS] COMMAND" in res.stdout and word in res.stdout
        assert "--install-completion" not in res.stdout  # curate's own option, not the group's
    res = cli("lak", "scan")
    assert res.exit_code == 2 and "Did you mean 'lake'?" in res.output


def test_a_package_adds_operators_and_a_command_group(cli, package):
    package("""\
        [curate.commands]
        hello = curate_test_plugin:app
        [curate.operators]
        my_filter = curate_operators.filters.sql:SqlFilter
        """, """\
        import typer
        app = typer.Typer(help="Says hello.")

        @app.command()
        def world():
            print("hello, world")

        @app.command()
        def moon():
            print("hello, moon")
        """)
    assert registry.catalog()["my_filter"] == "curate_operators.filters.sql:SqlFilter"
    assert "hello" in cli("--help").stdout and "Says hello." in cli("--help").stdout
    res = cli("hello", "world")
    assert res.exit_code == 0 and res.stdout == "hello, world\n"


def test_a_package_cannot_replace_curate_s_own(cli, package):
    package("""\
        [curate.commands]
        run = json:dumps
        lake = json:dumps
        [curate.operators]
        exact_dedup = json:dumps
        """)
    assert registry.catalog()["exact_dedup"] == "curate_operators.dedup.exact:ExactDedup"
    assert plugins.registered(plugins.COMMANDS)["lake"].value == "curate_lake.cli:app"
    assert "--resume" in cli("run", "--help").stdout
    assert cli("lake", "--help").exit_code == 0


@pytest.mark.parametrize("target, why", [
    ("curate_test_plugin_missing:app", "ModuleNotFoundError: No module named 'curate_test_plugin_missing'"),
    ("json:dumps", "TypeError: it is a function, not a Typer app"),
])
def test_a_broken_command_group_says_why_without_a_traceback(cli, package, target, why):
    package(f"[curate.commands]\nbroken = {target}\n")
    listing = cli("--help")
    assert listing.exit_code == 0 and "broken" in listing.stdout and "unavailable" in listing.stdout
    for args in (["broken"], ["broken", "--help"], ["broken", "scan", "-o", "x"]):
        res = cli(*args)
        assert res.exit_code == 1, args
        message = " ".join(res.stderr.split())
        assert f"`curate broken` is unavailable: {target} (registered by curate-test-plugin 1.0) does not load " \
               f"({why})" in message
        assert "Traceback" not in res.output
    assert "Traceback" in cli("--debug", "broken").stderr
    assert cli("ops").exit_code == 0  # the rest of curate works


def test_only_the_command_run_is_imported():
    code = ("import atexit, sys; sys.argv=['curate', 'run', '--help']\n"
            "atexit.register(lambda: print('LOADED', [m for m in ('curate_lake.cli', 'curate_operators.agent.cli') if m in sys.modules]))\n"
            "from curate.cli import main\nmain()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT).stdout
    assert "LOADED []" in out
