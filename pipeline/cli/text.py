"""Text from outside (providers, the Hub, files a user passes) as it may reach a terminal: data, never markup or
control sequences.

A provider's region string can hold rich markup (``[/bold]``) or terminal escape sequences (``ESC]0;title BEL``
sets the window title, ``ESC[2J`` clears the screen). Every string the CLI prints goes through :func:`clean`;
rich renders it as :class:`rich.text.Text` (never parsed as markup); the CLI's own emphasis is built from
:func:`styled` pieces, not from markup strings.
"""

from __future__ import annotations

import re

from rich.text import Text

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


def plain(value: object) -> Text:
    """A renderable that shows ``value`` literally: cleaned, never read as markup."""
    return Text(clean(value))


def styled(*parts: str | tuple[str, str]) -> Text:
    """One line from pieces: a string is data (cleaned, shown as is), ``(text, style)`` is the CLI's own emphasis."""
    line = Text()
    for part in parts:
        if isinstance(part, tuple):
            line.append(clean(part[0]), style=part[1])
        else:
            line.append(clean(part))
    return line
