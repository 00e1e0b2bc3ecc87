"""Text from outside (providers, the Hub, files a user passes) is data: never markup, never control sequences.

A provider's region or name can hold terminal escape sequences (``ESC]0;title BEL`` sets a terminal's window title,
``ESC[2J`` clears the screen) or other control characters. :func:`clean` removes them; the CLI passes every string
it prints through it (``pipeline.cli.text``), and the report's templates pass every value they print through it
(``pipeline.report.render``), where Jinja's autoescape then turns what is left into text, never markup.
"""

from __future__ import annotations

import re

#: an escape sequence as a whole: CSI (``ESC [ ... final``), OSC/DCS/APC/PM/SOS (``ESC ] ... BEL|ESC \\``), or a
#: two-character escape; then any remaining C0/C1 control character (newline and tab become a space)
_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]?"
                       r"|\x9b[0-?]*[ -/]*[@-~]|\x9d[^\x07\x9c]*(?:\x07|\x9c)?")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_BLANK = re.compile(r"[\t\n]")


def clean(value: object, *, lines: bool = False) -> str:
    """``value`` as text without escape sequences or control characters; with ``lines`` newlines are kept."""
    text = _SEQUENCE.sub("", str(value))
    if not lines:
        text = _BLANK.sub(" ", text)
    return _CONTROL.sub("", text)


def iso_utc(value: object) -> object:
    """A timestamp as every JSON output writes it: ISO 8601 in UTC ending in ``Z`` (``2026-11-28T12:00:00Z``, the
    form of seed 004's ``updated`` and of pydantic's dumps); a naive datetime is taken as UTC (DuckDB's
    ``TIMESTAMP`` columns hold UTC); text and None pass through."""
    from datetime import UTC, datetime

    if not isinstance(value, datetime):
        return value
    when = value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    return when.isoformat().replace("+00:00", "Z")
