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


#: Bytes per element of the dtypes safetensors headers name (``F4``-style sub-byte types are stored packed in U8
#: in practice). Config files name dtypes differently (``bfloat16``): those are :data:`DTYPE_BYTES`.
SAFETENSORS_DTYPE_BYTES: dict[str, float] = {
    "F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U64": 8, "U32": 4, "U16": 2,
    "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "E8M0": 1, "F8_E4M3FN": 1, "F4": 0.5,
    "F6_E2M3": 0.75, "F6_E3M2": 0.75, "C64": 8,
}
