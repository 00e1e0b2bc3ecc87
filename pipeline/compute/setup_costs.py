"""The cost fields of a setup (issues #12, #22): decode rates of its placement from the calibrated engine model,
$/1M output tokens single stream and at the concurrency the engine serves, and the calibration's ranges."""

from __future__ import annotations

from typing import Any

from pipeline.compute.placement_cache import Rates
from sizing_core import Architecture
from sizing_core.cost import per_million_tokens
from sizing_core.engines import default_engine
from sizing_core.gpus import GPU
from sizing_core.placement import Placement
from sizing_core.throughput import estimate

COST_FIELDS = ("decode_tokens_per_s", "max_concurrent_requests", "aggregate_tokens_per_s", "usd_per_million_tokens",
               "usd_per_million_tokens_batched", "decode_tokens_per_s_low", "decode_tokens_per_s_high",
               "aggregate_tokens_per_s_low", "aggregate_tokens_per_s_high", "usd_per_million_tokens_batched_low",
               "usd_per_million_tokens_batched_high")


def placement_rates(arch: Architecture, gpu: GPU, placed: Placement) -> Rates:
    """Decode rate of one request and the aggregate rate at the requests of the planned context the engine serves
    at once (its KV pool, capped by vLLM's max_num_seqs: ``sizing_core.throughput``)."""
    speed = estimate(arch, gpu, default_engine(gpu), placed)
    batch = max(1, speed.max_concurrent_requests)
    batched = estimate(arch, gpu, default_engine(gpu), placed, batch=batch) if batch > 1 else speed
    return Rates(speed.decode_tokens_per_s, batch, batched.aggregate_tokens_per_s)


def costs_from_rates(rates: Rates, price_per_hour: float,
                     decode_band: tuple[float, float] = (1.0, 1.0)) -> dict[str, Any]:
    """The cost fields of a setup from its placement's decode rates, its price and the calibration's decode band
    (measured / predicted low and high: ``sizing_core.calibration.band``)."""
    single, aggregate = rates.decode_tokens_per_s, rates.aggregate_tokens_per_s
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
            "usd_per_million_tokens_batched_high": usd(aggregate * low) if aggregate else None}
