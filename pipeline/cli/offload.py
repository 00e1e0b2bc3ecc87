"""``vramlab fit --offload``: a model on fewer GPUs than it needs, the rest of its weights in system RAM, as
llama.cpp runs it (``sizing_core.offload``): routed experts on the CPU (``--n-cpu-moe N``: the experts of N layers
stay in RAM) or whole layers (``-ngl N``: N layers on the GPUs). The answer is the least offload that fits the
GPUs' usable memory: how much stays on them, how much system RAM the rest takes, and the decode speed left.
"""

from __future__ import annotations

import math
from typing import Any

from sizing_core import Architecture
from sizing_core.engines import get_engine
from sizing_core.gpus import GPU
from sizing_core.offload import offload
from sizing_core.units import GIB

#: host memory bandwidth assumed for the CPU's share (dual-channel DDR5-5600: 2 x 44.8 GB/s = 89.6 GB/s peak; the
#: model takes 80 GB/s at 0.7 efficiency, sizing_core.offload's default)
HOST_BANDWIDTH_GBS = 80.0
#: system RAM besides the offloaded weights: the OS, llama.cpp's host buffers and the page cache it leans on
RAM_HEADROOM_GIB = 4.0


def offload_format(arch: Architecture, gpu: GPU, fmt: str | None) -> str:
    """The format ``--offload`` answers in: ``fmt`` when llama.cpp runs it here, else the checkpoint's own format
    when llama.cpp runs that, else the usual 4-bit GGUF (Q4_K_M)."""
    engine = get_engine("llama.cpp")
    for candidate in (fmt, "native"):
        if candidate is not None and engine.supports(gpu, candidate, arch).runs:
            return candidate
    return "q4_k_m"


def offload_answer(arch: Architecture, gpu: GPU, count: int, fmt: str, context: int, kv_cache_dtype: str,
                   mode: str) -> dict[str, Any]:
    """The least offload (``experts`` or ``layers``) that fits ``count`` x ``gpu`` under llama.cpp."""
    engine = get_engine("llama.cpp")
    support = engine.supports(gpu, fmt, arch)
    moe_layers = arch.moe_layers
    if mode == "auto":
        mode = "experts" if moe_layers else "layers"
    if mode == "experts" and not moe_layers:
        raise ValueError(f"{arch.model} has no routed experts: use --offload layers")
    budget = count * (engine.usable_bytes(gpu) - engine.activation_bytes(arch, 1)) / GIB  # llama.cpp: layer split

    def at(fraction: float) -> Any:  # noqa: ANN401 - an Offload
        return offload(arch, gpu, fmt, fraction, context, kv_cache_dtype, mode, host_bandwidth_gbs=HOST_BANDWIDTH_GBS)

    base = {"mode": mode, "engine": "llama.cpp", "format": fmt, "gpus": count, "budgetGiB": round(budget, 2),
            "hostBandwidthGBs": HOST_BANDWIDTH_GBS, "nativeSupport": support.native, "supportNote": support.note}
    if not support.runs:
        return base | {"fits": False, "reason": support.note}
    if mode == "experts":  # the experts of whole layers go to RAM: --n-cpu-moe N
        found = next((n for n in range(moe_layers + 1) if at(n / moe_layers).vram_gib <= budget), None)
        fraction = None if found is None else found / moe_layers
    else:  # -ngl: whole layers stay on the GPUs; search the smallest share of weights in RAM that fits
        lo, hi = 0.0, 1.0
        if at(1.0).vram_gib > budget:
            fraction = None
        elif at(0.0).vram_gib <= budget:
            fraction = 0.0
        else:
            for _ in range(40):
                mid = (lo + hi) / 2
                lo, hi = (lo, mid) if at(mid).vram_gib <= budget else (mid, hi)
            fraction = hi
    if fraction is None:
        return base | {"fits": False, "reason": f"even with every {'expert' if mode == 'experts' else 'layer'} in "
                                                f"system RAM, the rest needs more than {budget:.1f} GiB of GPU memory"}
    result = at(fraction)
    ram = result.ram_gib
    stored = arch.native.weight_format if fmt == "native" else fmt
    cpu_moe = round(fraction * moe_layers) if mode == "experts" else None
    flags = (f"--n-cpu-moe {cpu_moe}" if mode == "experts" else f"-ngl {result.gpu_layers}")
    split = f" --split-mode layer --tensor-split {','.join(['1'] * count)}" if count > 1 else ""
    return base | {
        "fits": True, "reason": None, "gpuLayers": result.gpu_layers, "cpuMoeLayers": cpu_moe,
        "vramGiB": round(result.vram_gib, 2), "ramGiB": round(ram, 2),
        "systemRamNeededGiB": math.ceil(ram + RAM_HEADROOM_GIB),
        "decodeTokensPerS": round(result.decode_tokens_per_s, 1) if result.decode_tokens_per_s else None,
        "command": f"llama-server -m <{stored.upper()} GGUF of {arch.model}> -c {context} {flags}{split}"
                   + (" -ngl 999" if mode == "experts" else ""),
        "note": (f"the routed experts of {cpu_moe} of {moe_layers} MoE layers in system RAM, computed by the CPU"
                 if mode == "experts" else f"{result.gpu_layers} of {arch.num_layers} layers on the GPU(s), the "
                 "rest computed by the CPU from system RAM")
                + f"; speed assumes {HOST_BANDWIDTH_GBS:g} GB/s of host memory bandwidth (dual-channel DDR5)"}
