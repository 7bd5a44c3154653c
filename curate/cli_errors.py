"""How every curate command ends on an error: the user's problems (CurateError) print a message
and exit 2, bugs print one line and exit 1; `curate --debug` adds the traceback."""

from __future__ import annotations

import functools

import typer
from rich.console import Console
from rich.markup import escape

from curate import interrupts

err = Console(stderr=True, soft_wrap=True)
show_tracebacks = False


def fail(exc: BaseException) -> None:
    from concurrent.futures.process import BrokenProcessPool

    from curate.errors import CurateError

    if show_tracebacks:
        err.print(getattr(exc, "worker_traceback", "") or "", markup=False, highlight=False)
        from rich.traceback import Traceback

        # the exception's own traceback: `fail` may be called outside the except block that caught it
        err.print(Traceback.from_exception(type(exc), exc, exc.__traceback__))
    if isinstance(exc, ModuleNotFoundError):  # an optional package not installed: which extra has it
        from curate.extras import missing

        ctx = _current_context()
        exc = missing(exc, f"`{ctx.command_path}`" if ctx else "this command") or exc
    if isinstance(exc, CurateError):
        # escaped: a message quoting the user's text ("columns: [url]") is not rich markup
        err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
        hint = getattr(exc, "hint", None)
        if hint:
            err.print(escape(hint), highlight=False)
        raise typer.Exit(2)
    interrupt = _interrupt_behind(exc)
    if interrupt is not None or interrupts.was_interrupted():
        raise typer.Exit(interrupts.report(interrupt.args[0] if interrupt and interrupt.args else None))
    denied = _denied(exc)
    if denied:  # the user's file system: a mode, an owner, a read-only mount, not curate
        err.print(f"[bold red]error:[/] {escape(denied)}", highlight=False)
        raise typer.Exit(2)
    if isinstance(exc, BrokenProcessPool):  # a worker was killed from outside (the OOM killer, say)
        err.print(
            f"[bold red]error:[/] a worker process died ({exc}); if memory ran out, use fewer --workers. "
            f"Continue with --resume",
            highlight=False,
        )
        raise typer.Exit(1)
    err.print(f"[bold red]internal error:[/] {type(exc).__name__}: {exc}", highlight=False)
    err.print("this is a bug in curate; run with --debug for the traceback")
    raise typer.Exit(1)


def _interrupt_behind(exc: BaseException) -> KeyboardInterrupt | None:
    """The interrupt `exc` is, or was raised while handling: unwinding from a SIGTERM may fail in
    its turn (a pool whose workers the signal ended is broken), and that error is the interrupt's
    doing, not a bug or a worker lost (CI saw a SIGTERM exit 1 so)."""
    seen: set[int] = set()
    at: BaseException | None = exc
    while at is not None and id(at) not in seen:
        if isinstance(at, KeyboardInterrupt):
            return at
        seen.add(id(at))
        at = at.__cause__ or at.__context__
    return None


def _denied(exc: BaseException) -> str | None:
    """What a PermissionError or a read-only file system (EROFS) says, naming the path; None for
    any other error."""
    import errno

    from curate.errors import running_as

    if not isinstance(exc, OSError) or not (isinstance(exc, PermissionError) or exc.errno == errno.EROFS):
        return None
    why = "it is on a read-only file system" if exc.errno == errno.EROFS else "permission denied"
    if exc.filename:
        where = str(exc.filename)
        detail = f"{where}: {why}"
    else:  # pyarrow's: "[Errno 13] Cannot create directory '/x/y'. Detail: ..."
        detail = f"{exc}"
    return f"{detail} (running as {running_as()}): choose another path, or change its permissions"


def handle_errors(command):
    """Decorate a Typer command so that no error reaches the user as a raw traceback."""

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        interrupts.install()
        try:
            result = command(*args, **kwargs)
        except (Exception, KeyboardInterrupt) as e:
            if type(e).__module__.split(".")[0] in ("typer", "click"):  # exits and usage errors: Typer's job
                raise
            fail(e)
        if interrupts.was_interrupted():  # a signal whose Interrupted something swallowed: never a success
            raise typer.Exit(interrupts.report())
        return result

    return wrapper


def _current_context():
    """The command line's click context, or None. Recent Typer (0.29 here) runs its own copy of
    click, whose context click.get_current_context never sees."""
    try:
        from typer._click.globals import get_current_context
    except ImportError:  # an older typer, on click itself
        from click import get_current_context
    return get_current_context(silent=True)
