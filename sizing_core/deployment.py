"""One deployment as an engine would run it: the plan for exactly N GPUs (the engine's default layout) or the
fewest, the engine's start-up figures (``engine_memory``), and its speed with error bands (``engine_speed``)."""

from __future__ import annotations

from .architecture import Architecture
from .engine_memory import EngineStartup, repack_extra_bytes, startup
from .engines import Engine, effective_format
from .gpus import GPU
from .placement import stage_weights, valid_tensor_parallel


def default_layout(arch: Architecture, gpu: GPU, engine: Engine, gpus: int) -> tuple[int, int]:
    """(TP, PP) an engine uses on exactly ``gpus`` GPUs: vLLM/SGLang the largest TP that divides the heads and
    ``gpus`` inside one machine, pipeline stages for the rest (across machines: TP = a whole machine); llama.cpp
    and MLX one layer range per device."""
    if not engine.tensor_parallel:
        return 1, gpus
    node = gpu.node_size
    for tp in (64, 32, 16, 8, 4, 2, 1):
        if tp <= min(gpus, node) and gpus % tp == 0 and valid_tensor_parallel(arch, tp):
            return tp, gpus // tp
    return 1, gpus


def engine_startup(arch: Architecture, gpu: GPU, engine: Engine, fmt: str, tp: int, pp: int, context: int,
                   kv_cache_dtype: str = "bf16", concurrency: int = 1) -> EngineStartup:
    """What ``engine`` logs at start-up for ``arch`` in ``fmt`` on TP x PP GPUs with ``max_model_len = context``
    (llama.cpp: ``concurrency`` slots of ``context`` tokens)."""
    stored = effective_format(arch, fmt)
    stages = [(layers, w + repack_extra_bytes(arch, stored, gpu, engine, tp, layers))
              for layers, w in stage_weights(arch, fmt, tp, pp)]
    return startup(arch, gpu, engine, stages, tp, context, kv_cache_dtype, concurrency)
