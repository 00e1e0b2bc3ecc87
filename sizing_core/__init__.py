"""vramlab's sizing library: pure computation, no I/O beyond its own package data, no Dagster, no network.

Entry points: :func:`parse_config` / :func:`parse_spec` build an :class:`Architecture`; :func:`size_model`
returns the memory report; ``kv_cache``, ``formats`` and ``parameters`` expose the pieces.
"""

from .architecture import Architecture, DeclaredParameters, QuantScheme
from .errors import ConfigError, SizingError, UnknownFormatError
from .hf_config import load_json, parse_config
from .report import DEFAULT_CONTEXTS, SizingReport, size_model
from .spec import ModelSpec, is_spec, parse_spec

__all__ = [
    "Architecture", "ConfigError", "DEFAULT_CONTEXTS", "DeclaredParameters", "ModelSpec", "QuantScheme",
    "SizingError", "SizingReport", "UnknownFormatError", "is_spec", "load_json", "parse_config", "parse_spec",
    "size_model",
]
