"""The `curate` command: the Typer app, its root options, and the commands it mounts: its own
(cli_run.py, cli_results.py, cli_tools.py, curate/ablate/command.py) and the command groups
packages register. Errors in recipes or data print a message and exit 2; bugs exit 1.

Heavy packages are imported inside the commands, so `curate --help` stays fast.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from typing import TYPE_CHECKING, cast

import typer
from typer.core import TyperGroup, TyperOption

from curate import cli_errors, plugins
from curate.ablate.command import ablate
from curate.cli_console import out
from curate.cli_results import card, inspect, report
from curate.cli_run import run, validate
from curate.cli_tools import demo, ops, serve_mock

if TYPE_CHECKING:
    from typer._click.core import Context  # typer vendors click: its Context, not click's


class _Commands(TyperGroup):
    """curate's own commands, then the command groups packages register in the `curate.commands`
    entry points (`curate adp`, `curate lake`). A group is imported only when it is run or a
    listing (--help, shell completion) needs its help, so `curate run` imports none of them."""

    def list_commands(self, ctx: Context) -> list[str]:
        own = super().list_commands(ctx)
        return own + [name for name in plugins.registered(plugins.COMMANDS) if name not in own]

    def get_command(self, ctx: Context, name: str):
        own = super().get_command(ctx, name)  # a plugin cannot replace one of curate's commands
        if own is not None or name not in plugins.registered(plugins.COMMANDS):
            return _own_options(own, self)
        return _own_options(_command_group(name), self)

    def resolve_command(self, ctx: Context, args: list[str]):
        if args and self.get_command(ctx, args[0]) is None:
            # No such command: Typer's "Did you mean ...?" looks in self.commands only.
            self.commands.update(
                {
                    name: _command_group(name)
                    for name in plugins.registered(plugins.COMMANDS)
                    if name not in self.commands
                }
            )
        return super().resolve_command(ctx, args)


def _flag_type(display_type_rich):
    """Typer's help shows each option's type, `<bool>` for a flag (--resume, --help), which takes
    no value: show none for flags."""

    def shown(self, ctx):
        return None if getattr(self, "is_flag", False) else display_type_rich(self, ctx)

    shown.flags_untyped = True
    return shown


if not getattr(TyperOption.display_type_rich, "flags_untyped", False):
    # a deliberate patch of Typer's help rendering (a method replaced on the class)
    TyperOption.display_type_rich = _flag_type(TyperOption.display_type_rich)  # type: ignore[method-assign]


def _debug(ctx, param, value: bool) -> None:
    if value:
        cli_errors.show_tracebacks = True


def _own_options(command, root):
    """`command` and the commands under it take --debug after their name too, as `curate --debug`
    (errors say "run with --debug")."""
    import copy

    if command is None:
        return None
    if not any("--debug" in p.opts for p in command.params):
        debug = copy.copy(next(p for p in root.params if "--debug" in p.opts))  # `curate --debug`'s, as built
        debug.callback, debug.expose_value, debug.is_eager = _debug, False, True
        debug.help = "Show tracebacks of errors (as curate --debug does)."
        command.params.append(debug)
    for sub in getattr(command, "commands", {}).values():
        _own_options(sub, root)
    return command


@lru_cache(maxsize=None)
def _command_group(name: str):
    """The registered group `name` as a command; one that does not load becomes a command that
    says why (a package installed without its code, an import error in it), not a traceback."""
    ep = plugins.registered(plugins.COMMANDS)[name]
    try:
        target = ep.load()
        if not isinstance(target, typer.Typer):
            raise TypeError(f"it is a {type(target).__name__}, not a Typer app")
        # Mounted as app.add_typer(target, name=name) would: named so, and without a group's
        # own --install-completion (that belongs to `curate` itself).
        host = typer.Typer(add_completion=False)
        host.add_typer(target, name=name)
        return cast(TyperGroup, typer.main.get_command(host)).commands[name]  # a Typer with a group: a TyperGroup
    except Exception as e:  # noqa: BLE001 - whatever a broken package raises, the rest of curate works
        return _unavailable(name, ep, e)


def _unavailable(name: str, ep, error: Exception):
    why = f"{type(error).__name__}: {error}"
    stub = typer.Typer(add_completion=False)

    # No options of its own and any arguments accepted, so `curate NAME ... --help` explains too.
    @stub.command(
        name=name,
        help=f"(unavailable: {why})",
        add_help_option=False,
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )
    def explain() -> None:
        if cli_errors.show_tracebacks:
            import traceback

            cli_errors.err.print("".join(traceback.format_exception(error)), markup=False, highlight=False)
        cli_errors.err.print(
            f"[bold red]error:[/] `curate {name}` is unavailable: {plugins.origin(ep)} does not "
            f"load ({why}); reinstall or uninstall that package",
            highlight=False,
        )
        raise typer.Exit(1)

    return typer.main.get_command(stub)


app = typer.Typer(
    cls=_Commands,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Curate training data: YAML recipes of operators over streamed Arrow batches.",
)


def _version(value: bool) -> None:
    if value:
        from curate import __version__

        out.print(f"curate {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _main(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks of errors."),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    cli_errors.show_tracebacks = debug


# curate's own commands, in the order --help lists them (only typer is imported where they are written)
app.command()(run)
app.command()(validate)
app.command()(ops)
app.command()(inspect)
app.command()(report)
app.command()(card)
app.command()(demo)
app.command("serve-mock")(serve_mock)
app.command("ablate")(ablate)


def main() -> None:
    from curate import interrupts, omp_wait

    interrupts.install()  # before anything is imported or parsed: a signal at any point ends cleanly
    omp_wait.spin_briefly()  # before faiss or torch loads libgomp
    try:
        _log_level()
        app()
    except KeyboardInterrupt as e:  # outside a command (while parsing its options, say)
        _exit(interrupts.report(e.args[0] if e.args else None))
    except SystemExit as e:
        _exit(e.code)


LOG_LEVEL = "CURATE_LOG_LEVEL"


def _log_level() -> None:
    """CURATE_LOG_LEVEL (DEBUG, INFO, ...): curate's and its operators' log lines on stderr at that
    level, with their time (a Global step's fit says its phases: signed, candidate pairs,
    verified); unset, only warnings. Other libraries' loggers stay at warnings."""
    import logging
    import os

    level = os.environ.get(LOG_LEVEL, "").strip().upper()
    if not level:
        return
    if not isinstance(logging.getLevelName(level), int):
        print(
            f"{LOG_LEVEL}={os.environ[LOG_LEVEL]!r} is not a log level (DEBUG, INFO, WARNING, ERROR)", file=sys.stderr
        )
        raise SystemExit(2)
    logging.basicConfig(format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr)
    for name in ("curate", "curate_operators", "curate_lake"):
        logging.getLogger(name).setLevel(level)


def _exit(code) -> None:
    """End the process with `code` (a SystemExit's) once the command is done: the atexit hooks
    run (stores' sessions closed, multiprocessing's helpers stopped) and the output is flushed,
    but the interpreter's finalization after them is skipped. It changes nothing on disk and took
    0.5-0.6 s of every `curate run` that read S3 (freeing every module and object, the AWS SDK's
    shutdown) while the shell or batch job waited. A thread the command left running (not a
    daemon) is waited for as Python does, by exiting normally."""
    import atexit
    import os
    import threading

    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(code)
    if code is not None and not isinstance(code, int):  # sys.exit("message"): printed, exit 1
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that went away (| head), a closed stream
            pass
    os._exit(code or 0)


if __name__ == "__main__":
    main()
