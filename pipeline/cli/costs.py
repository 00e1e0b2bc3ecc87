"""What a ``fit`` answer costs: the cheapest current on-demand setup of that GPU (whole instances, re-planned for
each instance shape exactly as ``pipeline/compute/setups.py`` prices the published setups), its $/h, $/month and
$/1M output tokens, and rent-versus-buy break-even (``sizing_core/cost.py``; hardware at the GPU's launch price,
power at its TDP, for the GPUs the plan needs)."""

from __future__ import annotations

from typing import Any

from pipeline.cli.offers import Snapshot, current_offers
from sizing_core import Architecture, cost
from sizing_core.gpus import GPU


def fit_cost(arch: Architecture, result: dict[str, Any], gpu: GPU, snapshot: Snapshot | None,
             hours_per_day: float, usd_per_kwh: float) -> dict[str, Any] | None:
    """The ``cost`` object of ``fit --json``; None when there is no plan."""
    from pipeline.compute.setups import cheapest_setups

    if not result["fits"]:
        return None
    n = result["gpus"]
    out: dict[str, Any] = {"snapshot": snapshot.id if snapshot else None, "offer": None, "hoursPerDay": hours_per_day,
                           "usdPerKwh": usd_per_kwh, "rentVsBuy": None}
    if snapshot is None:
        return out
    offers = current_offers(snapshot, gpu=gpu.id)
    fmt = result["substitute"]["format"] if result.get("substitute") else result["format"]
    found = cheapest_setups(arch, fmt, offers, context=result["context"], concurrency=result["concurrency"],
                            kv_cache_dtype=result["kvCacheDtype"], top=1)
    if not found:
        return out
    s = found[0]
    per_hour = s.price_per_hour
    out["offer"] = {
        "provider": s.provider, "instanceType": s.instance_type, "region": s.region, "instances": s.instances,
        "gpusPerInstance": s.gpus_per_instance, "gpusRented": s.gpus, "tensorParallel": s.tensor_parallel,
        "pipelineParallel": s.pipeline_parallel, "engine": s.engine, "pricePerHour": per_hour,
        "pricePerMonth": s.price_per_month, "pricePerMonthAtUsage": round(cost.monthly_at_usage(per_hour,
                                                                                               hours_per_day), 2),
        "verifiedAt": s.verified_at.isoformat(), "decodeTokensPerS": s.decode_tokens_per_s,
        "usdPerMillionTokens": s.usd_per_million_tokens, "batch": s.max_concurrent_requests,
        "usdPerMillionTokensBatched": s.usd_per_million_tokens_batched,
    }
    if gpu.launch_msrp_usd and gpu.tdp_w:
        hardware, watts = gpu.launch_msrp_usd * n, gpu.tdp_w * n
        months = cost.break_even_months(hardware, per_hour, hours_per_day, watts, usd_per_kwh)
        out["rentVsBuy"] = {
            "gpus": n, "hardwareUsd": round(hardware, 2), "watts": watts,
            "powerPerMonth": round(cost.power_cost_per_month(watts, hours_per_day, usd_per_kwh), 2),
            "rentPerMonthAtUsage": round(cost.monthly_at_usage(per_hour, hours_per_day), 2),
            "breakEvenMonths": round(months, 1) if months is not None else None,
        }
    return out
