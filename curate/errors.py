"""User-facing errors. The CLI prints their message and exits 2; anything else is a bug (exit 1)."""


class CurateError(Exception):
    """A problem with the user's recipe or data, described well enough to fix it."""

    hint: str | None = None  # what to do next, printed under the message (cli_errors)


class RecipeError(CurateError):
    """The recipe is invalid; `where` is the place in the YAML (e.g. `steps[2].exact_dedup.columns`)."""

    def __init__(self, where: str, message: str):
        self.where = where
        self.message = message
        super().__init__(f"{where}: {message}" if where else message)


class InputError(CurateError):
    """An input file cannot be read; the message names the file and, where known, the line/row and field."""


class NoSpace(CurateError):
    """The disk filled up (ENOSPC) in a worker; the runner reports where and how much is needed."""


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM (`args[0]`), raised in the main process (interrupts.py); the CLI exits 130 or 143."""


def running_as() -> str:
    """Who this process runs as, for errors about permissions: "user NAME", else "uid N"."""
    import getpass
    import os

    try:
        return f"user {getpass.getuser()}"
    except Exception:  # noqa: BLE001 - no name for this uid (a container)
        return f"uid {os.getuid()}"


class MissingPackage(CurateError, ImportError):
    """An optional package a command or operator needs is not installed; the message says which
    extra installs it (curate/extras.py). An ImportError too, for code that catches those."""

    def __init__(self, package: str, message: str):
        super().__init__(message)
        self.package = package
