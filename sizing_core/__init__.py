"""vramlab's sizing library: pure computation, no I/O beyond its own package data, no Dagster, no network.

Entry points: :func:`parse_config` / :func:`parse_spec` build an :class:`Architecture`; :func:`size_model`
returns the memory report; ``kv_cache``, ``formats`` and ``parameters`` expose the pieces.

The names below are imported on first use (PEP 562): ``import sizing_core.gpus`` (the GPU catalog, e.g. for
``vramlab gpus``) does not build the architecture and report models, which keeps the command line's start-up short.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from .errors import ConfigError, SizingError, UnknownFormatError

if TYPE_CHECKING:
    from .architecture import Architecture, DeclaredParameters, QuantScheme
    from .config.reader import load_json, parse_config
    from .memory_report import DEFAULT_CONTEXTS, SizingReport, size_model
    from .spec import ModelSpec, is_spec, parse_spec

_LAZY = {
    "Architecture": "architecture", "DeclaredParameters": "architecture", "QuantScheme": "architecture",
    "load_json": "config.reader", "parse_config": "config.reader",
    "DEFAULT_CONTEXTS": "memory_report", "SizingReport": "memory_report", "size_model": "memory_report",
    "ModelSpec": "spec", "is_spec": "spec", "parse_spec": "spec",
}

__all__ = [
    "Architecture", "ConfigError", "DEFAULT_CONTEXTS", "DeclaredParameters", "ModelSpec", "QuantScheme",
    "SizingError", "SizingReport", "UnknownFormatError", "is_spec", "load_json", "parse_config", "parse_spec",
    "size_model",
]


def __getattr__(name: str) -> Any:  # noqa: ANN401 - whatever the submodule defines
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sizing_core' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
