"""Errors every layer may raise for a person to read, and what a command does when its reader goes away.

At the bottom of the layer order (beside ``settings``) so that operations and the command line share them."""

import os
import sys


class UserError(Exception):
    """A user error (bad input, nothing published yet, another refresh running): one line, exit status 2."""


def discard_stdout() -> None:
    """Point stdout at /dev/null after its reader went away (``vramlab ... | head``): later writes, and the flush
    at interpreter exit, then succeed quietly instead of raising ``BrokenPipeError`` again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
