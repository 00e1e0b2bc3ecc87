"""What a ``fit`` answer costs: the plan ``fit`` shows (its engine, TP x PP, GPUs and machines) priced on the
cheapest current on-demand offer of that GPU whose instances can run that very plan, its $/h, $/month and $/1M
output tokens at the plan's own decode rate, and rent-versus-buy break-even (``sizing_core/cost.py``; hardware at
the GPU's launch price, power at its TDP, for the GPUs the plan needs).

An instance of ``k`` GPUs runs a plan of TP ``t`` x PP ``p`` when ``k >= t`` (tensor parallelism stays inside one
machine) with ``k // t`` stages per instance, so ``ceil(p / (k // t))`` instances; never more machines than the plan
shows, and several only where ``cheapest`` would deploy them (a rented cluster interconnect, or llama.cpp RPC).
The published setups (``cheapest``) re-plan for every instance shape with the default engine and may find a
cheaper shape (say two 1-GPU instances with PP 2 where ``fit`` shows TP 2 on one machine): that one is reported
next to the price as ``otherLayout``, named as a different layout, never as the price of the plan shown.
"""

from __future__ import annotations

import math
from typing import Any

from pipeline.exports.snapshot_offers import Snapshot, current_offers
from pipeline.text import iso_utc
from sizing_core import Architecture, cost
from sizing_core.gpus import GPU


def instances_for_plan(gpus_per_instance: int, tensor_parallel: int, pipeline_parallel: int) -> int | None:
    """Instances of ``gpus_per_instance`` GPUs that run TP x PP as planned; None when TP does not fit in one."""
    stages_per_instance = gpus_per_instance // tensor_parallel
    if stages_per_instance < 1:
        return None
    return math.ceil(pipeline_parallel / stages_per_instance)


def _rank(price: float, machines: int) -> float:
    from pipeline.compute.setups import MULTI_MACHINE_RANK_FACTOR

    return round(price * (MULTI_MACHINE_RANK_FACTOR if machines > 1 else 1.0), 6)


def price_plan(result: dict[str, Any], offers: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The cheapest current offer running ``result``'s plan as shown (ranked as ``cheapest`` ranks setups:
    several machines count 1.25x), with its $/h, $/month and $/1M tokens at the plan's decode rate."""
    from pipeline.compute.setups import ON_DEMAND, deployment, usable_offer

    plan = result["plan"]
    tp, pp, nodes = plan["tensorParallel"], plan["pipelineParallel"], plan["nodes"]
    best: tuple[tuple, dict[str, Any], int, str, str | None] | None = None
    for offer in offers:
        if not usable_offer(offer, ON_DEMAND):  # as the published setups: quality-eligible, on-demand offers only
            continue
        count = instances_for_plan(int(offer["gpu_count"]), tp, pp)
        if count is None or count > nodes:
            continue
        how = deployment(result["engine"], count, offer)
        if how is None:
            continue
        price = count * offer["price_per_hour_usd"]
        key = (_rank(price, count), price, offer["provider"], offer["instance_type"], offer.get("region") or "")
        if best is None or key < best[0]:
            best = (key, offer, count, *how)
    if best is None:
        return None
    _, offer, count, how, fabric = best
    per_hour = round(count * offer["price_per_hour_usd"], 4)
    speed = result["throughput"] or {}
    single = speed.get("decodeTokensPerS")
    full = result.get("throughputAtMaxConcurrency") or {}
    aggregate, batch = full.get("aggregateTokensPerS"), full.get("batch") or 1
    per_instance = int(offer["gpu_count"])
    verified = offer["verified_at"]
    return {
        "provider": offer["provider"], "instanceType": offer["instance_type"], "region": offer.get("region"),
        "instances": count, "gpusPerInstance": per_instance, "gpusRented": count * per_instance,
        "gpusUsed": plan["gpus"], "tensorParallel": tp, "pipelineParallel": pp, "engine": result["engine"],
        "deployment": how, "interconnect": fabric, "pricePerHour": per_hour,
        "pricePerMonth": round(cost.monthly(per_hour), 2),
        "verifiedAt": iso_utc(verified),
        "decodeTokensPerS": single,
        "usdPerMillionTokens": round(cost.per_million_tokens(per_hour, single), 4) if single else None,
        "batch": batch,
        "usdPerMillionTokensBatched": round(cost.per_million_tokens(per_hour, aggregate), 4) if aggregate else None,
        "usdPerMillionTokensBatchedRange": [round(cost.per_million_tokens(per_hour, r), 4) for r in
                                            reversed(full["aggregateTokensPerSRange"])]
        if full.get("aggregateTokensPerSRange") else None,
        "layout": _layout(count, per_instance, tp, pp),
    }


def _layout(instances: int, per_instance: int, tp: int, pp: int) -> str:
    return (f"{instances} x {per_instance} GPU{'s' if per_instance > 1 else ''} "
            f"({instances} machine{'s' if instances > 1 else ''}), TP {tp} x PP {pp}")


def other_layout(arch: Architecture, result: dict[str, Any], fmt: str, offers: list[dict[str, Any]],
                 priced: dict[str, Any] | None) -> dict[str, Any] | None:
    """The cheapest published-style setup (``cheapest``: re-planned per instance shape, default engine, ranked with
    several machines at 1.25x) when it is a different layout from the plan shown and costs fewer dollars an hour
    (or no offer runs the plan shown)."""
    from pipeline.compute.setups import cheapest_setups

    found = cheapest_setups(arch, fmt, offers, context=result["context"], concurrency=result["concurrency"],
                            kv_cache_dtype=result["kvCacheDtype"], top=1)
    if not found:
        return None
    s = found[0]
    same = priced is not None and (s.engine, s.tensor_parallel, s.pipeline_parallel, s.instances,
                                   s.gpus_per_instance) == (priced["engine"], priced["tensorParallel"],
                                                            priced["pipelineParallel"], priced["instances"],
                                                            priced["gpusPerInstance"])
    if same or (priced is not None and s.price_per_hour >= priced["pricePerHour"]):
        return None
    layout = _layout(s.instances, s.gpus_per_instance, s.tensor_parallel, s.pipeline_parallel)
    why = ("no current offer runs the plan shown" if priced is None else
           f"cheaper than the plan shown (${priced['pricePerHour']:,.2f}/h)")
    return {
        "provider": s.provider, "instanceType": s.instance_type, "region": s.region, "instances": s.instances,
        "gpusPerInstance": s.gpus_per_instance, "tensorParallel": s.tensor_parallel,
        "pipelineParallel": s.pipeline_parallel, "engine": s.engine, "deployment": s.deployment,
        "pricePerHour": s.price_per_hour, "pricePerMonth": s.price_per_month,
        "usdPerMillionTokens": s.usd_per_million_tokens, "layout": layout,
        "note": f"a different layout: {layout} with {s.engine} on {s.provider} {s.instance_type} at "
                f"${s.price_per_hour:,.2f}/h, as `vramlab cheapest` re-plans per instance shape; {why}",
    }


def fit_cost(arch: Architecture, result: dict[str, Any], gpu: GPU, snapshot: Snapshot | None,
             hours_per_day: float, usd_per_kwh: float,
             offers: list[dict[str, Any]] | None = None) -> dict[str, Any] | None:
    """The ``cost`` object of ``fit --json``; None when there is no plan. ``offers``: the snapshot's current
    on-demand offers of ``gpu`` when the caller already read them (``fit`` without ``--format``)."""
    if not result["fits"]:
        return None
    n = result["gpus"]
    out: dict[str, Any] = {"snapshot": snapshot.id if snapshot else None, "offer": None, "otherLayout": None,
                           "hoursPerDay": hours_per_day, "usdPerKwh": usd_per_kwh, "rentVsBuy": None}
    if snapshot is None:
        return out
    if offers is None:
        offers = current_offers(snapshot, gpu=gpu.id)
    fmt = result["substitute"]["format"] if result.get("substitute") else result["format"]
    offer = price_plan(result, offers)
    out["offer"] = offer
    out["otherLayout"] = other_layout(arch, result, fmt, offers, offer)
    if offer is None:
        return out
    per_hour = offer["pricePerHour"]
    offer["pricePerMonthAtUsage"] = round(cost.monthly_at_usage(per_hour, hours_per_day), 2)
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
