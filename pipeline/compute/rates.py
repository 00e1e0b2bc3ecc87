"""What a placement decodes and what its tokens cost: the decode rates of a placement (one request, the plan kept
full, the planned load), a setup's cost fields from them, and the bound that lets the cheapest-setups search
(``pipeline/compute/setups.py``) rank by cost per output token without placing every group."""

from __future__ import annotations

from typing import Any

from pipeline.compute.placement_cache import Rates
from sizing_core import Architecture
from sizing_core.cost import per_million_tokens
from sizing_core.engines import Engine, default_engine
from sizing_core.formats import tensor_bits
from sizing_core.gpus import GPU
from sizing_core.kv_cache import kv_bytes_per_request, state_bytes_per_request
from sizing_core.layers import MoE
from sizing_core.placement import Placement
from sizing_core.throughput import estimate
from sizing_core.units import GB


def load_rate(rates: Rates, concurrency: int) -> float | None:
    """All requests of the load together, tokens/s (one request: the single-stream rate)."""
    if rates.load_tokens_per_s is not None:
        return rates.load_tokens_per_s
    return rates.decode_tokens_per_s if concurrency == 1 else None


#: (id(arch), format) -> (arch, (all weight bytes, bytes a decode step reads at least)): memoised per model object,
#: like sizing_core's own per-model caches
_WEIGHTS: dict[tuple[int, str], tuple[Architecture, tuple[float, float]]] = {}


def weight_bytes(arch: Architecture, fmt: str) -> tuple[float, float]:
    """(every weight, the active weights: every non-expert weight and the routed experts' top-k share, the embedding
    rows aside) in bytes, in format ``fmt``."""
    hit = _WEIGHTS.get((id(arch), fmt))
    if hit is None or hit[0] is not arch:
        if len(_WEIGHTS) > 4096:
            _WEIGHTS.clear()
        total = active = 0.0
        for t, bits in zip(arch.tensors, tensor_bits(arch, fmt), strict=True):
            nbytes = t.numel * bits / 8
            total += nbytes
            if t.role == "token_embd":
                continue
            if t.is_routed_expert and t.layer is not None:
                mlp = arch.layers[t.layer].mlp
                assert isinstance(mlp, MoE)
                nbytes *= mlp.top_k / mlp.num_experts
            active += nbytes
        hit = _WEIGHTS[(id(arch), fmt)] = (arch, (total, active))
    return hit[1]


def per_token_floor(arch: Architecture, fmt: str, gpu: GPU, concurrency: int, context: int = 8192,
                    kv_cache_dtype: str = "bf16") -> float | None:
    """A lower bound of any setup's USD per 1M output tokens per USD per GPU-hour rented, at ``concurrency``
    requests of ``context`` tokens: a decode step reads at least the active weights (:func:`weight_bytes`) and each
    request's KV cache and state, and ``t`` GPUs read them at most ``t`` times faster than one at peak bandwidth,
    while a setup rents at least ``t`` GPUs. So tokens/s <= concurrency x GPUs x bandwidth / bytes, whatever the
    engine's efficiencies (the bound assumes decoding reads the whole cache each step, as
    ``sizing_core.throughput`` does; ``tests/test_setups_loads.py`` compares the pruned search with the exhaustive
    one). None when the GPU has no bandwidth figure (no $/token)."""
    if not gpu.bandwidth_gbs:
        return None
    hit = _CACHE.get((id(arch), context, kv_cache_dtype))
    if hit is None or hit[0] is not arch:
        if len(_CACHE) > 4096:
            _CACHE.clear()
        hit = _CACHE[(id(arch), context, kv_cache_dtype)] = (
            arch, kv_bytes_per_request(arch, context, kv_cache_dtype) + state_bytes_per_request(arch))
    return 1e6 * (weight_bytes(arch, fmt)[1] + concurrency * hit[1]) / (3600 * concurrency * gpu.bandwidth_gbs * GB)


#: (id(arch), context, kv dtype) -> (arch, KV cache and state bytes of one request)
_CACHE: dict[tuple[int, int, str], tuple[Architecture, float]] = {}


COST_FIELDS = ("decode_tokens_per_s", "max_concurrent_requests", "aggregate_tokens_per_s", "usd_per_million_tokens",
               "usd_per_million_tokens_batched")


def placement_rates(arch: Architecture, gpu: GPU, placed: Placement, engine: Engine | None = None) -> Rates:
    """Decode rate of one request, the aggregate rate at the most requests of the planned context the plan holds
    at once, and the aggregate rate at the planned load (the placement's concurrency) (``sizing_core.throughput``)."""
    engine = engine or default_engine(gpu)
    speed = estimate(arch, gpu, engine, placed)  # batch = the placement's concurrency: the load
    batch = max(1, speed.max_concurrent_requests)
    batched = estimate(arch, gpu, engine, placed, batch=batch) if batch != speed.batch else speed
    return Rates(speed.decode_tokens_per_s, batch, batched.aggregate_tokens_per_s, speed.aggregate_tokens_per_s)


def costs_from_rates(rates: Rates, price_per_hour: float, concurrency: int = 1) -> dict[str, Any]:
    """The cost fields of a setup from its placement's decode rates and its price; the load's own fields when
    the rates carry the aggregate at the load (``concurrency`` requests)."""
    single, aggregate = rates.decode_tokens_per_s, rates.aggregate_tokens_per_s
    at_load = rates.load_tokens_per_s if rates.load_tokens_per_s is not None else (single if concurrency == 1 else None)
    return {"decode_tokens_per_s": round(single, 2) if single else None, "max_concurrent_requests": rates.batch,
            "aggregate_tokens_per_s": round(aggregate, 2) if aggregate else None,
            "usd_per_million_tokens": round(per_million_tokens(price_per_hour, single), 4) if single else None,
            "usd_per_million_tokens_batched": round(per_million_tokens(price_per_hour, aggregate), 4)
            if aggregate else None,
            "tokens_per_s_per_request": round(at_load / concurrency, 2) if at_load else None,
            "usd_per_million_tokens_at_load": round(per_million_tokens(price_per_hour, at_load), 4)
            if at_load else None}
