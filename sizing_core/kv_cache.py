"""KV cache and recurrent state per request, per GPU of a tensor-parallel group.

Cache types are those engines offer: bf16/fp16 (2 bytes), fp8 (1 byte, per-tensor scale: no extra bytes),
llama.cpp q8_0 (34 bytes per 32 values) and q4_0 (18 per 32). Recurrent state keeps its own dtype whatever the
cache type (vLLM's ``mamba_ssm_cache_dtype``; KDA's recurrent state is always float32).
"""

from __future__ import annotations

from .architecture import Architecture
from .errors import UnknownFormatError

CACHE_DTYPE_BYTES: dict[str, float] = {"bf16": 2, "fp16": 2, "fp8": 1, "q8_0": 34 / 32, "q4_0": 18 / 32}


def cache_bytes(cache_dtype: str) -> float:
    try:
        return CACHE_DTYPE_BYTES[cache_dtype]
    except KeyError:
        raise UnknownFormatError(
            f"unknown KV cache type {cache_dtype!r} (known: {', '.join(CACHE_DTYPE_BYTES)})") from None


def _check_tp(tp: int) -> None:
    if tp < 1:
        raise ValueError(f"tensor-parallel size must be >= 1, got {tp}")


def kv_bytes_per_token(arch: Architecture, cache_dtype: str = "bf16", tp: int = 1) -> float:
    """Bytes each further token of context adds, summed over the layers whose cache grows with context."""
    _check_tp(tp)
    b = cache_bytes(cache_dtype)
    return sum(layer.mixer.kv_bytes_per_token(b, tp) for layer in arch.layers if layer.mixer is not None)


def kv_bytes_per_request(arch: Architecture, context: int, cache_dtype: str = "bf16", tp: int = 1) -> float:
    """KV bytes one request of ``context`` tokens holds, window- and chunk-capped layers included."""
    _check_tp(tp)
    if context < 0:
        raise ValueError(f"context must be >= 0, got {context}")
    b = cache_bytes(cache_dtype)
    return sum(layer.mixer.kv_bytes_per_request(context, b, tp) for layer in arch.layers if layer.mixer is not None)


def state_bytes_per_request(arch: Architecture, tp: int = 1) -> float:
    """Fixed recurrent state (linear attention, SSM) of one request, independent of context."""
    _check_tp(tp)
    return sum(layer.mixer.state_bytes(tp) for layer in arch.layers if layer.mixer is not None)
