"""Cost per output token at a load (issue #23): the rate a placement decodes the whole load at, and the bound that
lets the cheapest-setups search (``pipeline/compute/setups.py``) rank by cost per token without placing every
group. The cost fields themselves: ``pipeline/compute/setup_costs.py``."""

from __future__ import annotations

from pipeline.compute.placement_cache import Rates
from sizing_core import Architecture
from sizing_core.formats import tensor_bits
from sizing_core.gpus import GPU
from sizing_core.kv_cache import kv_bytes_per_request, state_bytes_per_request
from sizing_core.layers import MoE
from sizing_core.units import GB


def load_rate(rates: Rates, concurrency: int) -> float | None:
    """All requests of the load together, tokens/s (one request: the single-stream rate)."""
    if rates.load_tokens_per_s is not None:
        return rates.load_tokens_per_s
    return rates.decode_tokens_per_s if concurrency == 1 else None


#: (id(arch), format) -> (arch, (all weight bytes, bytes a decode step reads at least)): memoised per model object,
#: like sizing_core's own per-model caches
_WEIGHTS: dict[tuple[int, str], tuple[Architecture, tuple[float, float]]] = {}


def known_weight_bytes(arch: Architecture, fmt: str) -> tuple[float, float] | None:
    """:func:`weight_bytes` if this process knows it (computed or :func:`remember_weight_bytes`), never computed."""
    hit = _WEIGHTS.get((id(arch), fmt))
    return hit[1] if hit is not None and hit[0] is arch else None


def remember_weight_bytes(arch: Architecture, fmt: str, value: tuple[float, float]) -> None:
    """Seed :func:`weight_bytes` with a value an earlier run computed for this model revision and code (#28)."""
    if len(_WEIGHTS) > 4096:
        _WEIGHTS.clear()
    _WEIGHTS[(id(arch), fmt)] = (arch, value)


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
