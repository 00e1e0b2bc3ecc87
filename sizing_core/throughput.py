"""Speed of a plan as the engine delivers it (``engines.speed``: roofline plus fixed per-layer costs, fitted on the
calibration set) with the calibration's error bands, and the roofline helpers that model reuses.

- Decode step time = bytes read per step / (memory bandwidth x efficiency), summed over pipeline stages (one
  request passes every stage in turn). Bytes per step = the weights a step touches (dense: all; MoE: shared parts
  plus the expected distinct experts E(1-(1-k/E)^B) for a batch of B) + every sequence's KV cache and state.
- Prefill time = FLOPs / (peak dense tensor FLOPS x MFU x TP). FLOPs = 2 x active parameters per token plus
  causal attention 2 x T^2 x heads x (d_k + d_v) per attention layer.
- Efficiency constants are calibrated against published measurements (``docs/placement.md``): bandwidth 0.6 of
  peak on discrete GPUs (NVIDIA NIM: Llama-3.3-70B FP8 on 2xH100 decodes at 18.6 ms/token, 0.57 of the
  roofline), 0.75 on unified memory (Apple 70-85%, Strix Halo 84% measured); MFU 0.5 for prefill; tensor
  parallelism loses 5% per doubling to its all-reduces (TP 2: 0.95, TP 8: 0.85).
"""

from __future__ import annotations

import math

from .architecture import Architecture
from .engines import Engine
from .gpus import GPU
from .placement.search import Placement, Plan
from .record import CamelRecord, record
from .roofline import (  # noqa: F401 - re-exported: the names other modules and tests import from here
    _active_params,
    _attention_flops_per_token,
    _cache_bytes_per_request,
    _step_bytes,
    peak_flops,
)

DISCRETE_BANDWIDTH_EFFICIENCY = 0.6
UNIFIED_BANDWIDTH_EFFICIENCY = 0.75
PREFILL_MFU = 0.5
TTFT_PROMPT = 4096


Range = tuple[float, float] | None


@record
class Throughput(CamelRecord):
    decode_tokens_per_s: float | None  # one request at the placement's context
    prefill_tokens_per_s: float | None
    ttft_ms: float | None  # for a TTFT_PROMPT-token prompt
    ttft_prompt_tokens: int = TTFT_PROMPT
    batch: int
    aggregate_tokens_per_s: float | None  # decode, all ``batch`` requests together
    max_concurrent_requests: int  # requests of the context the engine serves at once on this plan
    bandwidth_efficiency: float
    mfu: float
    notes: str
    # the calibration's spread (measured / predicted) around each figure
    decode_tokens_per_s_range: Range = None
    prefill_tokens_per_s_range: Range = None
    ttft_ms_range: Range = None
    aggregate_tokens_per_s_range: Range = None
    decode_step_ms: float | None = None  # one batch-1 step: max(bandwidth, compute) + fixed costs
    fixed_step_ms: float | None = None  # the fixed part: launches, routing, all-reduces


def _range(value: float | None, band: tuple[float, float]) -> Range:
    """``value`` times the band's (low, high) measured / predicted factors."""
    if value is None:
        return None
    low, high = band
    return (value * low, value * high)


def estimate(arch: Architecture, gpu: GPU, engine: Engine, placement: Placement, batch: int | None = None) -> Throughput:
    """Decode (one request, and ``batch`` requests together: by default the placement's concurrency), prefill and
    TTFT of the placement's plan, each with its calibration band; ``max_concurrent_requests`` is what the engine
    serves at once at the placement's context (its KV pool, capped by vLLM's max_num_seqs)."""
    from .calibration import band
    from .engines.speed import (
        PREFILL_MFU,
        bandwidth_efficiency,
        decode_step,
        family,
        prefill_tokens_per_s,
        ttft_ms,
    )
    from .placement.deployment import served_concurrency, startup_for_plan

    plan: Plan | None = placement.plan
    mfu = PREFILL_MFU[family(engine)]
    if plan is None:
        return Throughput(decode_tokens_per_s=None, prefill_tokens_per_s=None, ttft_ms=None,
                          batch=batch or placement.concurrency, aggregate_tokens_per_s=None, max_concurrent_requests=0,
                          bandwidth_efficiency=0.0, mfu=mfu, notes="no deployment")
    tp, pp, fmt, context = plan.tensor_parallel, plan.pipeline_parallel, placement.format, placement.context
    native, kv = placement.native_support, placement.kv_cache_dtype
    served = served_concurrency(startup_for_plan(arch, gpu, engine, placement), engine, gpu)
    batch = batch or placement.concurrency
    notes = []
    one = decode_step(arch, gpu, engine, fmt, tp, pp, context, 1, kv, native, plan.nodes)
    many = decode_step(arch, gpu, engine, fmt, tp, pp, context, batch, kv, native, plan.nodes) if batch > 1 else one
    decode = aggregate = None
    if one is not None and many is not None:
        decode, aggregate = 1000 / one.total_ms, batch * 1000 / many.total_ms
    else:
        notes.append("no bandwidth figure for this GPU")
    prefill = prefill_tokens_per_s(arch, gpu, engine, fmt, tp, TTFT_PROMPT, native)
    ttft = ttft_ms(arch, gpu, engine, fmt, tp, pp, TTFT_PROMPT, native, plan.nodes)
    if prefill is None:
        notes.append("no tensor-FLOPS figure for this GPU")
    if pp > 1:
        notes.append("pipeline stages run one after another for a single request")
    decode_band = band("decode", engine.id, gpu, arch)
    return Throughput(decode_tokens_per_s=decode, prefill_tokens_per_s=prefill, ttft_ms=ttft, batch=batch,
                      aggregate_tokens_per_s=aggregate, max_concurrent_requests=served,
                      bandwidth_efficiency=bandwidth_efficiency(engine, gpu), mfu=mfu, notes="; ".join(notes),
                      decode_tokens_per_s_range=_range(decode, decode_band),
                      prefill_tokens_per_s_range=_range(prefill, band("prefill", engine.id, gpu, arch)),
                      ttft_ms_range=_range(ttft, band("ttft", engine.id, gpu, arch)),
                      aggregate_tokens_per_s_range=_range(aggregate, decode_band),
                      decode_step_ms=one.total_ms if one else None, fixed_step_ms=one.fixed_ms if one else None)


def max_concurrency(plan: Plan, placement: Placement) -> int:
    """Requests of ``context`` tokens the plan holds at once by the planner's own budget (each stage's free memory
    over what one request costs there; the tightest stage decides). The engine's own figure is
    ``deployment.startup_for_plan(...).max_concurrency``."""
    best = math.inf
    for stage in plan.stages:
        per_request = (stage.kv_cache + stage.recurrent_state) / placement.concurrency
        free = plan.usable_gib - (stage.total - stage.kv_cache - stage.recurrent_state)
        if per_request > 0:
            best = min(best, free / per_request)
    return int(best) if best != math.inf else 0
