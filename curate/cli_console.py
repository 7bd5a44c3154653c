"""Where curate's commands print what they made: `out`, stdout (errors and warnings go to stderr,
through cli_errors.err)."""

from __future__ import annotations

import sys

from rich.console import Console

out = Console(width=None if sys.stdout.isatty() else 120)  # logs of batch jobs get full tables
