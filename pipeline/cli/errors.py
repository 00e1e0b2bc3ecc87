"""The CLI's user error (printed as one line ``vramlab: error: ...``, exit status 2) and what the CLI does when
its reader goes away."""

import os
import sys


class CliError(Exception):
    """A user error (bad input, nothing published yet, another refresh running)."""


def discard_stdout() -> None:
    """Point stdout at /dev/null after its reader went away (``vramlab ... | head``): later writes, and the flush
    at interpreter exit, then succeed quietly instead of raising ``BrokenPipeError`` again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())

