"""Units. GiB = 2**30 bytes, GB = 10**9 bytes: the seeds report weights and KV cache in GiB."""

from __future__ import annotations

GIB = 2**30
MIB = 2**20
GB = 10**9

#: bytes per element of the dtypes that configs name for weights and caches.
DTYPE_BYTES: dict[str, float] = {
    "float32": 4,
    "fp32": 4,
    "bfloat16": 2,
    "bf16": 2,
    "float16": 2,
    "fp16": 2,
    "auto": 2,
    "float8": 1,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
}


def gib(nbytes: float) -> float:
    return nbytes / GIB


def dtype_bytes(name: str | None, default: float = 2) -> float:
    if name is None:
        return default
    return DTYPE_BYTES[name.lower()]
