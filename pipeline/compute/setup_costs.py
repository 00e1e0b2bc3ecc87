"""The cost fields of a setup: decode rates of its placement from the calibrated engine model,
$/1M output tokens single stream and at the concurrency the engine serves, and the calibration's ranges."""

from __future__ import annotations

from typing import Any

from pipeline.compute.placement_cache import Rates
from sizing_core import Architecture
from sizing_core.cost import per_million_tokens
from sizing_core.engines import Engine, default_engine
from sizing_core.engines.speed import decode_step
from sizing_core.gpus import GPU
from sizing_core.placement.deployment import served_concurrency, startup_for_layout
from sizing_core.placement.search import Placement
from sizing_core.throughput import estimate

COST_FIELDS = ("decode_tokens_per_s", "max_concurrent_requests", "aggregate_tokens_per_s", "usd_per_million_tokens",
               "usd_per_million_tokens_batched", "decode_tokens_per_s_low", "decode_tokens_per_s_high",
               "aggregate_tokens_per_s_low", "aggregate_tokens_per_s_high", "usd_per_million_tokens_batched_low",
               "usd_per_million_tokens_batched_high", "tokens_per_s_per_request", "usd_per_million_tokens_at_load")


def placement_rates(arch: Architecture, gpu: GPU, placed: Placement, engine: Engine | None = None) -> Rates:
    """Decode rate of one request, the aggregate rate at the requests of the planned context the engine serves
    at once (its KV pool, capped by vLLM's max_num_seqs: ``sizing_core.throughput``), and the aggregate rate at the
    planned load (the placement's concurrency)."""
    engine = engine or default_engine(gpu)
    speed = estimate(arch, gpu, engine, placed)  # batch = the placement's concurrency: the load
    batch = max(1, speed.max_concurrent_requests)
    batched = estimate(arch, gpu, engine, placed, batch=batch) if batch != speed.batch else speed
    return Rates(speed.decode_tokens_per_s, batch, batched.aggregate_tokens_per_s, speed.aggregate_tokens_per_s)


def layout_rates(arch: Architecture, gpu: GPU, engine: Engine, fmt: str, layout: tuple[int, int, int],
                 load: tuple[int, int, str], native: bool) -> Rates:
    """:func:`placement_rates` from the layout alone (TP, PP, and the nodes its plan spans), without building the
    placement's plan (the full plan search again and prefill and TTFT figures, unused here, were half of a cold
    setups run): the same decode steps (``sizing_core.throughput.estimate``'s) and the same engine start-up.
    ``load``: (context, concurrency, KV cache dtype). ``tests/test_setups_planner.py`` compares the two."""
    tp, pp, nodes = layout
    context, concurrency, kv = load
    served = served_concurrency(startup_for_layout(arch, gpu, engine, fmt, tp, pp, context, kv, concurrency), engine,
                                gpu)

    def step_ms(batch: int) -> float | None:
        step = decode_step(arch, gpu, engine, fmt, tp, pp, context, batch, kv, native, nodes)
        return None if step is None else step.total_ms

    one = step_ms(1)
    if one is None:  # no bandwidth figure
        return Rates(None, max(1, served), None, None)
    at_load = concurrency * 1000 / (step_ms(concurrency) if concurrency > 1 else one)
    batch = max(1, served)
    batched = batch * 1000 / (step_ms(batch) if batch > 1 else one) if batch != concurrency else at_load
    return Rates(1000 / one, batch, batched, at_load)


def costs_from_rates(rates: Rates, price_per_hour: float, decode_band: tuple[float, float] = (1.0, 1.0),
                     concurrency: int = 1) -> dict[str, Any]:
    """The cost fields of a setup from its placement's decode rates, its price and the calibration's decode band
    (measured / predicted low and high: ``sizing_core.calibration.band``); with the aggregate at the load
    (``concurrency`` requests), the load's own fields ."""
    single, aggregate = rates.decode_tokens_per_s, rates.aggregate_tokens_per_s
    at_load = rates.load_tokens_per_s if rates.load_tokens_per_s is not None else (single if concurrency == 1 else None)
    low, high = decode_band

    def usd(rate: float | None) -> float | None:
        return round(per_million_tokens(price_per_hour, rate), 4) if rate else None

    return {"decode_tokens_per_s": round(single, 2) if single else None, "max_concurrent_requests": rates.batch,
            "aggregate_tokens_per_s": round(aggregate, 2) if aggregate else None,
            "usd_per_million_tokens": usd(single), "usd_per_million_tokens_batched": usd(aggregate),
            "decode_tokens_per_s_low": round(single * low, 2) if single else None,
            "decode_tokens_per_s_high": round(single * high, 2) if single else None,
            "aggregate_tokens_per_s_low": round(aggregate * low, 2) if aggregate else None,
            "aggregate_tokens_per_s_high": round(aggregate * high, 2) if aggregate else None,
            "usd_per_million_tokens_batched_low": usd(aggregate * high) if aggregate else None,
            "usd_per_million_tokens_batched_high": usd(aggregate * low) if aggregate else None,
            "tokens_per_s_per_request": round(at_load / concurrency, 2) if at_load else None,
            "usd_per_million_tokens_at_load": usd(at_load)}
