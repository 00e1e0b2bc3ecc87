"""The CLI's user error, printed as one line ``vramlab: error: ...`` with exit status 2."""

from pipeline.errors import UserError


class CliError(UserError):
    """A user error met by a command (bad input, nothing published yet)."""
