"""The CLI's user error: printed as one line ``vramlab: error: ...``, exit status 2."""


class CliError(Exception):
    """A user error (bad input, nothing published yet, another refresh running)."""
