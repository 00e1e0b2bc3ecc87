"""Partial offload to system RAM (seed 000's "System RAM Offload"): the VRAM still needed, the decode speed left.

Two ways llama.cpp offloads, both modelled:
- ``layers`` (``-ngl N``): the first N decoder layers on the GPU, the rest computed by the CPU from RAM;
- ``experts`` (``--n-cpu-moe`` / ``-ot exps=CPU``): routed experts stay in RAM and the CPU computes them, all
  else (attention, shared experts, embeddings, cache) on the GPU.
Decode time per token = GPU bytes / (GPU bandwidth x eff) + RAM bytes / (host bandwidth x 0.7). A third,
vLLM's ``--cpu-offload-gb``, streams the offloaded weights over PCIe every step instead: reported too.
"""

from __future__ import annotations

from .architecture import Architecture
from .formats import tensor_bits
from .gpus import GPU
from .kv_cache import kv_bytes_per_request, state_bytes_per_request
from .layers import MoE
from .record import CamelRecord, record
from .throughput import DISCRETE_BANDWIDTH_EFFICIENCY, UNIFIED_BANDWIDTH_EFFICIENCY
from .units import GB, GIB

HOST_EFFICIENCY = 0.7


@record
class Offload(CamelRecord):
    mode: str
    gpu_layers: int
    vram_gib: float  # weights + cache kept on the GPU
    ram_gib: float  # weights left in system RAM
    decode_tokens_per_s: float | None  # CPU computes the offloaded part from RAM
    pcie_stream_tokens_per_s: float | None  # vLLM --cpu-offload-gb: offloaded weights cross PCIe every step


def offload(arch: Architecture, gpu: GPU, fmt: str, ram_fraction: float, context: int = 8192,
            kv_cache_dtype: str = "bf16", mode: str = "layers", host_bandwidth_gbs: float = 80.0,
            pcie_gbs: float = 25.0) -> Offload:
    """Keep ``1 - ram_fraction`` of the weights on the GPU (by whole layers in ``layers`` mode)."""
    if not 0 <= ram_fraction <= 1:
        raise ValueError(f"ram_fraction must be between 0 and 1, got {ram_fraction}")
    if mode not in ("layers", "experts"):
        raise ValueError(f"mode must be 'layers' or 'experts', got {mode!r}")
    bits = tensor_bits(arch, fmt)
    layer_bytes, layer_active, outside, outside_active = [0.0] * arch.num_layers, [0.0] * arch.num_layers, 0.0, 0.0
    expert_bytes = expert_active = 0.0
    for t, b in zip(arch.tensors, bits, strict=True):
        nbytes = t.numel * b / 8
        share = 1.0
        if t.is_routed_expert and t.layer is not None:
            mlp = arch.layers[t.layer].mlp
            assert isinstance(mlp, MoE)
            share = mlp.top_k / mlp.num_experts
            expert_bytes += nbytes
            expert_active += nbytes * share
        if t.layer is None:
            outside += nbytes
            outside_active += nbytes if t.role != "token_embd" else 0.0
        else:
            layer_bytes[t.layer] += nbytes
            layer_active[t.layer] += nbytes * share
    cache = kv_bytes_per_request(arch, context, kv_cache_dtype) + state_bytes_per_request(arch)
    total = sum(layer_bytes) + outside
    if mode == "experts":
        ram = expert_bytes * ram_fraction
        ram_active = expert_active * ram_fraction
        gpu_layers = arch.num_layers
    else:
        budget = total * (1 - ram_fraction) - outside
        gpu_layers, used = 0, 0.0
        for nbytes in layer_bytes:
            if used + nbytes > budget:
                break
            used += nbytes
            gpu_layers += 1
        ram = sum(layer_bytes[gpu_layers:])
        ram_active = sum(layer_active[gpu_layers:])
    vram = total - ram + cache
    gpu_active = sum(layer_active) + outside_active + cache - ram_active
    eff = UNIFIED_BANDWIDTH_EFFICIENCY if gpu.kind in ("apple", "unified") else DISCRETE_BANDWIDTH_EFFICIENCY
    decode = pcie = None
    if gpu.bandwidth_gbs:
        step = gpu_active / (gpu.bandwidth_gbs * GB * eff) + ram_active / (host_bandwidth_gbs * GB * HOST_EFFICIENCY)
        decode = 1 / step
        streamed = ram if mode == "layers" else ram_active
        pcie = 1 / (gpu_active / (gpu.bandwidth_gbs * GB * eff) + streamed / (pcie_gbs * GB))
    return Offload(mode=mode, gpu_layers=gpu_layers, vram_gib=vram / GIB, ram_gib=ram / GIB,
                   decode_tokens_per_s=decode, pcie_stream_tokens_per_s=pcie)
