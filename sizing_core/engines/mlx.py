"""MLX (mlx-lm) on Apple silicon: the Metal wired-memory limit minus a fixed buffer, its own 16-bit, 8-bit and MXFP4
formats. Memory, speed and the command line are modelled as llama.cpp's (a GGUF-style runner with a layer split);
what differs is where it runs and what it loads."""

from __future__ import annotations

from typing import ClassVar

from ..architecture import Architecture
from ..gpus import GPU
from .base import Support
from .llamacpp import LlamaCpp

#: formats MLX converts to and runs
MLX_FORMATS = ("bf16", "fp16", "q8_0", "mxfp4")


class MLX(LlamaCpp):
    """MLX: Apple silicon only; machines join through MLX's own distributed launch, not llama.cpp's RPC."""

    joins_machines_over_rpc: ClassVar[bool] = False
    layer_kinds: ClassVar[frozenset[str] | None] = None  # not claimed for any architecture yet
    compact_kv_dtype: ClassVar[str | None] = None  # llama.cpp's q8_0 cache is not an MLX setting

    def runs_on(self, gpu: GPU) -> bool:
        """Apple silicon only (Metal)."""
        return gpu.kind == "apple"

    def supports_format(self, gpu: GPU, fmt: str, arch: Architecture | None) -> Support:
        if gpu.kind != "apple":
            return Support(runs=False, native=False, note="MLX runs on Apple silicon only")
        ok = fmt in MLX_FORMATS
        return Support(runs=ok, native=ok, note="MLX" if ok else f"MLX has no {fmt} format")
