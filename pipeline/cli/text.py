"""Text from outside as it reaches a terminal: cleaned (:func:`pipeline.text.clean`), then never read as markup.

A provider's region string can hold rich markup (``[/bold]``) as well as escape sequences. Every string the CLI
prints goes through :func:`clean`; rich renders it as :class:`rich.text.Text` (never parsed as markup); the CLI's own
emphasis is built from :func:`styled` pieces, not from markup strings.
"""

from __future__ import annotations

from rich.text import Text

from pipeline.text import clean

__all__ = ["clean", "counted", "plain", "styled"]


def counted(n: int, noun: str) -> str:
    """``n`` and the noun in the number it takes: "1 provider", "2 providers"."""
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


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
