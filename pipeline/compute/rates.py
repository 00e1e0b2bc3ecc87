"""Cost per output token at a load: the rate a placement decodes the whole load at, and the bound that
lets the cheapest-setups search (``pipeline/compute/setups.py``) rank by cost per token without placing every
group. The cost fields themselves: ``pipeline/compute/setup_costs.py``."""

from __future__ import annotations

from pipeline.compute.placement_cache import Rates
from sizing_core import Architecture
from sizing_core.engines import Engine
from sizing_core.engines.speed import decode_step_floor
from sizing_core.formats import tensor_bits
from sizing_core.gpus import GPU
from sizing_core.layers import MoE
from sizing_core.memo import model_memo


def load_rate(rates: Rates, concurrency: int) -> float | None:
    """All requests of the load together, tokens/s (one request: the single-stream rate)."""
    if rates.load_tokens_per_s is not None:
        return rates.load_tokens_per_s
    return rates.decode_tokens_per_s if concurrency == 1 else None


#: (id(arch), format) -> (arch, (all weight bytes, bytes a decode step reads at least)): memoised per model object,
#: like sizing_core's own per-model caches
_WEIGHTS: dict[tuple[int, str], tuple[Architecture, tuple[float, float]]] = model_memo()


def known_weight_bytes(arch: Architecture, fmt: str) -> tuple[float, float] | None:
    """:func:`weight_bytes` if this process knows it (computed or :func:`remember_weight_bytes`), never computed."""
    hit = _WEIGHTS.get((id(arch), fmt))
    return hit[1] if hit is not None and hit[0] is arch else None


def remember_weight_bytes(arch: Architecture, fmt: str, value: tuple[float, float]) -> None:
    """Seed :func:`weight_bytes` with a value an earlier run computed for this model revision and code."""
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


def token_cost_floor(arch: Architecture, fmt: str, gpu: GPU, engine: Engine, concurrency: int, context: int = 8192,
                     kv_cache_dtype: str = "bf16") -> tuple[float, float] | None:
    """(a, b): any setup of this model, format and load on ``gpu`` under ``engine`` with a TP group of ``tp`` GPUs
    costs at least its price per hour x (a / tp + b) USD per 1M output tokens (before the multi-machine rank
    factor). It decodes ``concurrency`` tokens per step (its rate at the load: ``setup_costs.layout_rates``), and a
    step takes at least spread / tp + fixed ms (``sizing_core.engines.speed.decode_step_floor`` of the active
    weights, :func:`weight_bytes`: the calibrated bandwidth efficiency and the per-layer costs every layout pays).
    ``tests/test_setups_loads.py`` compares the pruned search with the exhaustive one. None when the GPU has no
    bandwidth figure (no $/token)."""
    floor = decode_step_floor(arch, gpu, engine, weight_bytes(arch, fmt)[1], context, concurrency, kv_cache_dtype)
    if floor is None:
        return None
    per_ms = 1e6 / (3600 * 1000 * concurrency)  # USD per 1M tokens per (USD per hour x ms per step)
    return floor[0] * per_ms, floor[1] * per_ms
