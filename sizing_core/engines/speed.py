"""Decode and prefill speed as engines deliver it: a roofline plus the fixed costs a step pays whatever the GPU.

Time of one decode step for ``batch`` sequences of ``context`` tokens (``docs/calibration.md`` has the fit)::

    step = max(bytes read / (bandwidth x efficiency), FLOPs / (peak x MFU))      summed over pipeline stages
         + layers x per-layer cost (kernel launches or CUDA-graph replay; x EAGER_FACTOR without graphs)
         + MoE layers x routing cost
         + 2 x layers x all-reduce latency of the link (TP > 1; NVLink, PCIe or the network between nodes)
         + (stages - 1) x pipeline hop + per-step cost (sampling, scheduling)

Bytes read: the weights a step touches (all dense weights, the expected distinct routed experts of the batch) plus
every sequence's KV cache and recurrent state, on one GPU of the TP group. Prefill of a prompt is compute-bound at
the engine's MFU (never faster than reading the weights once); time to first token adds the fixed costs of a step.

The constants are few and physical (an efficiency per engine family and memory system, microseconds per layer and
per all-reduce, milliseconds per step and hop, an MFU per engine family), fitted by ``scripts/calibrate.py`` on the
calibration set (``calibration.py``) and written here.
"""

from __future__ import annotations

from typing import Any

from ..architecture import Architecture
from ..batch import SCALAR, Ops
from ..gpus import GPU
from ..layers import CompressedSparseAttention, MLAAttention, MoE
from ..memo import model_memo
from ..record import CamelRecord, record
from ..roofline import (
    _active_params,
    _attention_flops_per_token,
    _cache_bytes_per_request,
    _expert_step_bytes,
    _step_bytes,
    peak_flops,
)
from ..units import GB
from .base import Engine, effective_format

# --- fitted on the calibration set (scripts/calibrate.py --fit; docs/calibration.md) --------------------------
#: share of peak memory bandwidth a decode step reaches: HBM per engine family, GDDR and unified memory for all
BANDWIDTH_EFFICIENCY = {"server-hbm": 0.583, "llama.cpp-hbm": 0.606, "gddr": 1.0, "unified": 0.700}
#: per decoder layer and step (CUDA-graph replay or kernel launches): vLLM/SGLang, llama.cpp builds of 2024 and
#: earlier (b < 4400), llama.cpp since 2025
LAYER_US = {"server": 52.3, "llama.cpp-2024": 109.7, "llama.cpp": 40.6}
EAGER_FACTOR = 3.84  # per-layer cost without CUDA graphs
MOE_LAYER_US = 18.4  # routing, top-k and grouped-GEMM launches of one MoE layer
EXPERT_EFFICIENCY = 0.805  # routed experts stream at this share of the dense weights' efficiency (small grouped GEMMs)
MLA_LAYER_US = 121.5  # the extra kernels of one latent-attention layer (absorbed projections, indexer)
PREFILL_MFU = {"server": 0.406, "llama.cpp": 0.245}
TTFT_FLOOR_MS = {"server": 26.3, "llama.cpp": 5.8}  # request handling before the first forward pass
#: fitted to zero, so not modelled apart: a pipeline hop and a per-step cost (sampling, scheduling) are within the
#: per-layer cost on this set (a fit with them drives both to < 1 us)
HOP_MS = 0.0
STEP_MS = {"server": 0.0, "llama.cpp": 0.0}
# --- measured, not fitted ------------------------------------------------------------------------------------------
#: one all-reduce of a decode-sized message (two per layer under TP): custom/one-shot kernels on NVLink 4-12 us
#: (sgl-project/sglang#2904: 3.7-11.8 us at TP 2-8; vllm-project/vllm#22086: 10 us with RMSNorm), NCCL over PCIe
#: 19-24 us inside one PCIe switch (haohervchb/sglang-V100#2, 4 GPUs), 57-132 us across two PCIe islands of an
#: 8-GPU box (vllm-project/vllm#50576: taken for TP 8 on PCIe), NCCL between nodes 23-33 us on multi-node NVLink
#: and more over InfiniBand (sgl-project/sglang#32461)
ALLREDUCE_US = {"nvlink": 10.0, "pcie": 25.0, "pcie-islands": 100.0, "network": 100.0}
# -----------------------------------------------------------------------------------------------------------------


def family(engine: Engine) -> str:
    """The key of the fitted tables an engine reads (``server``: vLLM/SGLang; ``llama.cpp``: GGUF runners)."""
    return engine.speed_family


def memory_class(gpu: GPU) -> str:
    if gpu.kind in ("unified", "apple"):
        return "unified"
    return "hbm" if (gpu.memory_kind or "").upper().startswith("HBM") else "gddr"


def link(gpu: GPU, tp: int, nodes: int = 1) -> str:
    """What carries a TP group's all-reduces: NVLink/NVSwitch or Infinity Fabric, a 2-GPU bridge, else PCIe (one
    switch up to 4 GPUs, two CPU-socket islands at 8)."""
    if nodes > 1:
        return "network"
    text = (gpu.interconnect or "").lower().replace("no nvlink", "")  # "PCIe 4.0 x16 (no NVLink)": L40S, L4
    if "nvlink" in text or "infinity fabric" in text or "xgmi" in text:
        if "bridge" in text and tp > 2:
            return "pcie" if tp <= 4 else "pcie-islands"
        return "nvlink"
    return "pcie" if tp <= 4 else "pcie-islands"


def layer_us(engine: Engine) -> float:
    return LAYER_US[engine.layer_cost_key()] * (EAGER_FACTOR if eager(engine) else 1.0)


def bandwidth_efficiency(engine: Engine, gpu: GPU) -> float:
    memory = memory_class(gpu)
    return BANDWIDTH_EFFICIENCY[f"{family(engine)}-hbm" if memory == "hbm" else memory]


def eager(engine: Engine) -> bool:
    """No CUDA graphs: asked for, or an engine version from before them (vLLM < 0.3)."""
    return engine.eager()


@record
class StepTime(CamelRecord):
    bandwidth_ms: float  # weights and cache over the effective bandwidth, all stages
    compute_ms: float  # FLOPs over the effective peak, all stages
    fixed_ms: float  # launches, routing, all-reduces, hops, per-step work
    total_ms: float


def moe_layer_count(arch: Architecture) -> int:
    return sum(1 for layer in arch.layers if isinstance(layer.mlp, MoE))


def mla_layer_count(arch: Architecture) -> int:
    """Layers of latent attention (MLA, DeepSeek-V4's compressed sparse attention): their extra kernels."""
    return sum(1 for layer in arch.layers if isinstance(layer.mixer, MLAAttention | CompressedSparseAttention))


def _peak(gpu: GPU, fmt: str, native: bool, engine: Engine) -> float | None:
    """Dense tensor FLOPS the engine's kernels can reach: vLLM/SGLang accumulate in FP32 (GeForce half rate,
    ``throughput.peak_flops``); llama.cpp's CUDA kernels accumulate FP16 on GeForce cards (full rate)."""
    flops = peak_flops(gpu, fmt, native)
    if flops and engine.fp16_accumulate_on_geforce and gpu.kind == "consumer" and gpu.is_nvidia:
        flops *= 2
    return flops


def fixed_ms(arch: Architecture, gpu: GPU, engine: Engine, tp: int, pp: int, nodes: int = 1) -> float:
    fixed = _fixed_floor(arch, engine)
    if tp > 1:
        fixed += 2 * arch.num_layers * ALLREDUCE_US[link(gpu, tp, nodes if tp > gpu.node_size else 1)] / 1000
    return fixed + (pp - 1) * HOP_MS


def decode_ms(step_bytes: Any, expert_bytes: Any, cache: Any, tp: Any, pp: Any, bandwidth: Any, fixed_floor: Any,
              allreduce_us: Any, layers: Any, compute_ms: Any, batch: Any = 1,
              ops: Ops = SCALAR) -> tuple[Any, Any, Any]:
    """(bandwidth, fixed, total) milliseconds of one decode step: the rule, on numbers (:func:`decode_step`) or on
    the sizing grid's columns (``sizing_core.batch``). ``step_bytes``: the weights the step reads (all GPUs),
    ``expert_bytes`` their routed-expert part (streamed at :data:`EXPERT_EFFICIENCY`, counted as extra bytes);
    ``cache``: one request's cache on one GPU of the TP group; ``bandwidth``: bytes/s the engine reaches;
    ``fixed_floor``: the fixed costs at TP 1 and one stage; ``allreduce_us``: one all-reduce on the TP group's link
    (0 at TP 1); ``compute_ms``: the compute-bound time (:func:`decode_compute_ms`, 0 without a FLOPS figure).
    Pipeline stages run one after another: pp x (1/pp) of the bytes."""
    experts = expert_bytes / tp
    per_gpu = step_bytes / tp + batch * cache
    per_gpu = per_gpu + experts * (1 / EXPERT_EFFICIENCY - 1)
    bandwidth_ms = per_gpu / bandwidth * 1000
    fixed = fixed_floor + ops.div(2 * layers * allreduce_us, 1000) + (pp - 1) * HOP_MS
    return bandwidth_ms, fixed, ops.maximum(bandwidth_ms, compute_ms) + fixed


def decode_compute_ms(per_token_flops: Any, tp: Any, peak: Any, batch: Any = 1) -> Any:
    """The compute-bound time of a decode step: ``batch`` tokens of ``per_token_flops`` on one GPU of the TP group
    at ``peak`` (the GPU's dense FLOPS x the engine's MFU). Numbers or columns."""
    return batch * per_token_flops / tp / peak * 1000


def decode_step(arch: Architecture, gpu: GPU, engine: Engine, fmt: str, tp: int, pp: int, context: int,
                batch: int = 1, kv_cache_dtype: str = "bf16", native: bool = True, nodes: int = 1) -> StepTime | None:
    """One decode step of ``batch`` sequences of ``context`` tokens (:func:`decode_ms`); None without a bandwidth
    figure."""
    if gpu.bandwidth_gbs is None:
        return None
    eff = bandwidth_efficiency(engine, gpu)
    flops = _peak(gpu, effective_format(arch, fmt), native, engine)
    compute_ms = 0.0
    if flops:
        per_token = 2 * _active_params(arch) + _attention_flops_per_token(arch, 2 * context)
        compute_ms = decode_compute_ms(per_token, tp, flops * PREFILL_MFU[family(engine)], batch)
    allreduce = ALLREDUCE_US[link(gpu, tp, nodes if tp > gpu.node_size else 1)] if tp > 1 else 0.0
    bandwidth_ms, fixed, total = decode_ms(
        _step_bytes(arch, fmt, batch), _expert_step_bytes(arch, fmt, batch),
        _cache_bytes_per_request(arch, context, kv_cache_dtype, tp), tp, pp, gpu.bandwidth_gbs * GB * eff,
        _fixed_floor(arch, engine), allreduce, arch.num_layers, compute_ms, batch)
    return StepTime(bandwidth_ms=bandwidth_ms, compute_ms=compute_ms, fixed_ms=fixed, total_ms=total)


def decode_step_floor(arch: Architecture, gpu: GPU, engine: Engine, weights: float, context: int, batch: int = 1,
                      kv_cache_dtype: str = "bf16") -> tuple[float, float] | None:
    """(spread, fixed) in ms: :func:`decode_step` of ``batch`` sequences takes at least ``spread / tp + fixed`` on
    every layout (TP, PP, nodes) and support, given ``weights`` <= the weight bytes the step reads (the active
    weights: every non-expert weight and the routed experts' top-k share, the embedding rows aside), so a search
    can rank a GPU kind by cost per token before planning on it (``pipeline/compute/setups.py``). ``spread``: the
    bandwidth term on one GPU (a TP group splits weights and caches at best evenly; a KV head or latent cache
    replicated across the group, the batch's extra experts and their slower streaming only add); ``fixed``: the
    fixed costs without all-reduces or hops (each only adds). The compute term is left out (the step takes the
    larger of the two). None without a bandwidth figure."""
    if gpu.bandwidth_gbs is None:
        return None
    cache = _cache_bytes_per_request(arch, context, kv_cache_dtype, 1)
    spread = (weights + batch * cache) / (gpu.bandwidth_gbs * GB * bandwidth_efficiency(engine, gpu)) * 1000
    return spread, _fixed_floor(arch, engine)


def _fixed_floor(arch: Architecture, engine: Engine) -> float:
    """:func:`fixed_ms` at TP 1 and one stage (no all-reduce, no hop), memoised per model object and engine."""
    key = (id(arch), engine.id, engine.version, engine.enforce_eager)
    hit = _FIXED_FLOORS.get(key)
    if hit is None or hit[0] is not arch:
        if len(_FIXED_FLOORS) > 4096:
            _FIXED_FLOORS.clear()
        fixed = (arch.num_layers * layer_us(engine) + moe_layer_count(arch) * MOE_LAYER_US
                 + mla_layer_count(arch) * MLA_LAYER_US) / 1000 + STEP_MS[family(engine)]
        hit = _FIXED_FLOORS[key] = (arch, fixed)
    return hit[1]


_FIXED_FLOORS: dict[tuple, tuple[Architecture, float]] = model_memo()


def prefill_tokens_per_s(arch: Architecture, gpu: GPU, engine: Engine, fmt: str, tp: int, prompt: int,
                         native: bool = True) -> float | None:
    """Prompt tokens per second of one long prompt: compute-bound at the engine's MFU on the TP group (pipeline
    stages take turns), never faster than reading the weights once per chunk of 8,192 tokens."""
    flops = _peak(gpu, fmt, native, engine)
    if not flops:
        return None
    per_token = 2 * _active_params(arch) + _attention_flops_per_token(arch, prompt)
    rate = flops * PREFILL_MFU[family(engine)] * tp / per_token
    if gpu.bandwidth_gbs:
        chunk = min(prompt, 8192)
        weights_s = _step_bytes(arch, fmt, chunk) / tp / (gpu.bandwidth_gbs * GB)
        rate = min(rate, chunk / weights_s)
    return rate


def ttft_ms(arch: Architecture, gpu: GPU, engine: Engine, fmt: str, tp: int, pp: int, prompt: int,
            native: bool = True, nodes: int = 1) -> float | None:
    rate = prefill_tokens_per_s(arch, gpu, engine, fmt, tp, prompt, native)
    if rate is None:
        return None
    return TTFT_FLOOR_MS[family(engine)] + prompt / rate * 1000 + fixed_ms(arch, gpu, engine, tp, pp, nodes)
