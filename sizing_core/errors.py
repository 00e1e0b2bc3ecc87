"""Errors raised by sizing_core. Every one names the model and, where there is one, the config field."""

from __future__ import annotations


class SizingError(ValueError):
    """Base class: a model cannot be sized as described."""


class ConfigError(SizingError):
    """A config or spec is malformed: missing field, wrong type, unknown model type, impossible value."""

    def __init__(self, model: str, field: str | None, message: str):
        self.model = model
        self.field = field
        where = f" field '{field}'" if field else ""
        super().__init__(f"{model}:{where} {message}".replace(": ", ": ", 1))


class UnknownFormatError(SizingError):
    """A weight format or cache dtype name we do not know."""


class UnsupportedQuantization(SizingError):
    """The checkpoint's own quantization scheme is unknown: its native size cannot be computed (every other
    format, the KV cache and the parameters still can)."""
