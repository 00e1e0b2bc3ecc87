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

from .architecture import Architecture
from .engines import Engine
from .gpus import GPU
from .layers import MoE
from .record import CamelRecord, record
from .throughput import _active_params, _attention_flops_per_token, _cache_bytes_per_request, _step_bytes, peak_flops
from .units import GB

# --- fitted on the calibration set (scripts/calibrate.py --fit; docs/calibration.md) --------------------------
#: share of peak memory bandwidth a decode step reaches, per engine family and memory system
BANDWIDTH_EFFICIENCY = {("server", "hbm"): 0.80, ("server", "gddr"): 0.85, ("server", "unified"): 0.75,
                        ("llama.cpp", "hbm"): 0.60, ("llama.cpp", "gddr"): 0.90, ("llama.cpp", "unified"): 0.75}
LAYER_US = {"vllm": 90.0, "sglang": 70.0, "llama.cpp": 80.0, "mlx": 80.0}  # per decoder layer and step
EAGER_FACTOR = 2.0  # per-layer cost without CUDA graphs
MOE_LAYER_US = 40.0  # routing, top-k and grouped-GEMM launches of one MoE layer
ALLREDUCE_US = {"nvlink": 8.0, "pcie": 40.0, "network": 100.0}  # one all-reduce of a decode step (two per layer)
HOP_MS = 0.2  # handing a step to the next pipeline stage
STEP_MS = {"vllm": 1.0, "sglang": 0.5, "llama.cpp": 0.3, "mlx": 0.3}  # sampling, scheduling, host work per step
PREFILL_MFU = {"server": 0.45, "llama.cpp": 0.35}
TTFT_FLOOR_MS = {"server": 15.0, "llama.cpp": 5.0}  # request handling before the first forward pass
# -----------------------------------------------------------------------------------------------------------------


def family(engine: Engine) -> str:
    return "server" if engine.id in ("vllm", "sglang") else "llama.cpp"


def memory_class(gpu: GPU) -> str:
    if gpu.kind in ("unified", "apple"):
        return "unified"
    return "hbm" if (gpu.memory_kind or "").upper().startswith("HBM") else "gddr"


def link(gpu: GPU, tp: int, nodes: int = 1) -> str:
    """What carries a TP group's all-reduces: NVLink/NVSwitch or Infinity Fabric, a 2-GPU bridge, else PCIe."""
    if nodes > 1:
        return "network"
    text = (gpu.interconnect or "").lower()
    if "nvlink" in text or "infinity fabric" in text or "xgmi" in text:
        if "bridge" in text and tp > 2:
            return "pcie"
        return "nvlink"
    return "pcie"


def eager(engine: Engine) -> bool:
    """No CUDA graphs: asked for, or an engine version from before them (vLLM < 0.3)."""
    from .engine_memory import parse_version

    version = parse_version(engine.version)
    return engine.enforce_eager or (engine.id == "vllm" and version is not None and version < (0, 3))


@record
class StepTime(CamelRecord):
    bandwidth_ms: float  # weights and cache over the effective bandwidth, all stages
    compute_ms: float  # FLOPs over the effective peak, all stages
    fixed_ms: float  # launches, routing, all-reduces, hops, per-step work
    total_ms: float


def _moe_layers(arch: Architecture) -> int:
    return sum(1 for layer in arch.layers if isinstance(layer.mlp, MoE))


def fixed_ms(arch: Architecture, gpu: GPU, engine: Engine, tp: int, pp: int, nodes: int = 1) -> float:
    layer_us = LAYER_US.get(engine.id, 80.0) * (EAGER_FACTOR if eager(engine) else 1.0)
    fixed = arch.num_layers * layer_us + _moe_layers(arch) * MOE_LAYER_US
    if tp > 1:
        fixed += 2 * arch.num_layers * ALLREDUCE_US[link(gpu, tp, nodes if tp > gpu.node_size else 1)]
    fixed = fixed / 1000 + (pp - 1) * HOP_MS + STEP_MS.get(engine.id, 0.5)
    return fixed


def decode_step(arch: Architecture, gpu: GPU, engine: Engine, fmt: str, tp: int, pp: int, context: int,
                batch: int = 1, kv_cache_dtype: str = "bf16", native: bool = True, nodes: int = 1) -> StepTime | None:
    """One decode step of ``batch`` sequences of ``context`` tokens; None without a bandwidth figure."""
    if gpu.bandwidth_gbs is None:
        return None
    eff = BANDWIDTH_EFFICIENCY[(family(engine), memory_class(gpu))]
    per_gpu = _step_bytes(arch, fmt, batch) / tp + batch * _cache_bytes_per_request(arch, context, kv_cache_dtype, tp)
    bandwidth_ms = per_gpu / (gpu.bandwidth_gbs * GB * eff) * 1000  # stages run one after another: pp x (1/pp)
    flops = peak_flops(gpu, fmt, native)
    compute_ms = 0.0
    if flops:
        per_token = 2 * _active_params(arch) + _attention_flops_per_token(arch, 2 * context)
        compute_ms = batch * per_token / tp / (flops * PREFILL_MFU[family(engine)]) * 1000
    fixed = fixed_ms(arch, gpu, engine, tp, pp, nodes)
    total = max(bandwidth_ms, compute_ms) + fixed
    return StepTime(bandwidth_ms=bandwidth_ms, compute_ms=compute_ms, fixed_ms=fixed, total_ms=total)


def prefill_tokens_per_s(arch: Architecture, gpu: GPU, engine: Engine, fmt: str, tp: int, prompt: int,
                         native: bool = True) -> float | None:
    """Prompt tokens per second of one long prompt: compute-bound at the engine's MFU on the TP group (pipeline
    stages take turns), never faster than reading the weights once per chunk of 8,192 tokens."""
    flops = peak_flops(gpu, fmt, native)
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
