"""Inference engines as types: one class per engine (``VLLM``, ``SGLang``, ``LlamaCpp``, ``MLX``) under a common
:class:`Engine` base, each answering for its own memory, KV paging, formats, speed family and launch command; the
registry maps ids (case-insensitive, with aliases) to instances with default settings. Sources and figures:
``docs/placement.md`` and ``docs/calibration.md``."""

from __future__ import annotations

from .base import NATIVE_AS_FORMAT, Engine, EngineId, Scheduler, Support, UnknownEngineError, effective_format
from .llamacpp import LlamaCpp
from .mlx import MLX
from .registry import ALIASES, ENGINES, default_engine, engines_on, get_engine
from .server import ServerEngine
from .sglang import SGLang
from .vllm import VLLM

__all__ = [
    "ALIASES", "ENGINES", "MLX", "NATIVE_AS_FORMAT", "VLLM", "Engine", "EngineId", "LlamaCpp", "SGLang", "Scheduler",
    "ServerEngine", "Support", "UnknownEngineError", "default_engine", "effective_format", "engines_on",
    "get_engine",
]
