"""Cheapest setups: the fewest-GPU deployment of a model priced on what providers really rent.

For each GPU kind with current offers, the planner (``sizing_core.placement``) gives the fewest GPUs under the
engine's rules, re-planned for each instance shape (TP cannot exceed the GPUs in one instance). A provider that
sells 8-GPU instances charges for 8 even when 6 would do; several instances are used only when the engine spans
machines (vLLM/SGLang pipeline stages, llama.cpp RPC), always of one offer (same provider, instance type and
region). Stale, removed, fractional and unconfirmed-jump offers are excluded. On-demand and spot/marketplace
prices are separate lists, never mixed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from pydantic import Field

from sizing_core import Architecture
from sizing_core.cost import HOURS_PER_MONTH, per_million_tokens
from sizing_core.engines import default_engine
from sizing_core.gpus import GPU, catalog
from sizing_core.placement import Placement, fewest_gpus
from sizing_core.schema import CamelModel
from sizing_core.throughput import estimate

ON_DEMAND = ("on_demand",)
SPOT_LIKE = ("spot", "marketplace", "marketplace_median", "bid_statistics")


class Setup(CamelModel):
    provider: str
    source: str
    instance_type: str
    region: str | None
    gpu: str
    gpu_name: str
    instances: int
    gpus_per_instance: int
    gpus: int  # rented
    gpus_needed: int
    tensor_parallel: int
    pipeline_parallel: int
    price_per_hour: float  # USD, all instances
    price_per_month: float  # USD, 730 hours
    price_per_gpu_hour: float  # USD per rented GPU
    currency_listed: str
    fx_date: str | None
    allocation: str
    format: str
    engine: str
    verified_at: datetime
    # cost of the answer (issue #12): decode rate of the plan, $/1M output tokens single stream and at the
    # concurrency the plan allows at its context; None when the GPU has no bandwidth figure
    decode_tokens_per_s: float | None = Field(
        default=None, description="decode speed of one request on this plan",
        json_schema_extra={"unit": "tokens/s"})
    max_concurrent_requests: int | None = Field(
        default=None, description="requests of the planned context the plan holds at once",
        json_schema_extra={"unit": "requests"})
    aggregate_tokens_per_s: float | None = Field(
        default=None, description="decode speed of all max_concurrent_requests together",
        json_schema_extra={"unit": "tokens/s"})
    usd_per_million_tokens: float | None = Field(
        default=None, description="price_per_hour / (decode_tokens_per_s x 3600) x 1e6: one request at a time",
        json_schema_extra={"unit": "USD per 1M output tokens"})
    usd_per_million_tokens_batched: float | None = Field(
        default=None, description="price_per_hour / (aggregate_tokens_per_s x 3600) x 1e6: the plan kept full",
        json_schema_extra={"unit": "USD per 1M output tokens"})


def instances_needed(gpus_needed: int, gpus_per_instance: int, spans_machines: bool) -> int | None:
    """Whole instances to rent: 6 GPUs from 8-GPU instances is 1 instance; from 1-GPU offers, 6 instances."""
    if gpus_per_instance >= gpus_needed:
        return 1
    if not spans_machines:
        return None
    return math.ceil(gpus_needed / gpus_per_instance)


def usable_offer(offer: dict[str, Any], allocations: tuple[str, ...]) -> bool:
    return (offer["allocation"] in allocations and offer.get("gpu_id") is not None and not offer.get("stale")
            and not offer.get("removed") and not offer.get("jump_unconfirmed") and not offer.get("fractional")
            and offer["gpu_count"] >= 1)


class Planner:
    """Caches the fewest-GPU placement per (GPU, GPUs per instance) for one model, format and scenario."""

    def __init__(self, arch: Architecture, fmt: str, context: int, concurrency: int, kv_cache_dtype: str):
        self.arch, self.fmt, self.context, self.concurrency, self.kv = arch, fmt, context, concurrency, kv_cache_dtype
        self._cache: dict[tuple[str, int], Placement] = {}

    def place(self, gpu: GPU, per_instance: int) -> Placement:
        key = (gpu.id, per_instance)
        if key not in self._cache:
            shaped = gpu.model_copy(update={"max_gpus_per_node": per_instance})
            self._cache[key] = fewest_gpus(self.arch, shaped, default_engine(gpu), self.fmt, self.context,
                                           self.concurrency, self.kv)
        return self._cache[key]


def cheapest_setups(arch: Architecture, fmt: str, offers: Iterable[dict[str, Any]], *, context: int = 8192,
                    concurrency: int = 1, kv_cache_dtype: str = "bf16", top: int = 5,
                    allocations: tuple[str, ...] = ON_DEMAND, planner: Planner | None = None) -> list[Setup]:
    """The ``top`` cheapest setups; pass one ``planner`` to share placements between calls (on-demand, spot)."""
    gpus = catalog()
    planner = planner or Planner(arch, fmt, context, concurrency, kv_cache_dtype)
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for offer in offers:
        if usable_offer(offer, allocations) and offer["gpu_id"] in gpus:
            groups.setdefault((offer["gpu_id"], int(offer["gpu_count"])), []).append(offer)
    # cheapest candidate per (provider, instance type, region): (price, offer, placement, instances)
    best: dict[tuple[str, str, str | None], tuple[float, dict[str, Any], Placement, int]] = {}
    for (gpu_id, per_instance), group in groups.items():
        placed = planner.place(gpus[gpu_id], per_instance)
        if placed.gpus is None or placed.plan is None:
            continue
        count = instances_needed(placed.gpus, per_instance, default_engine(gpus[gpu_id]).splits_layers)
        if count is None:
            continue
        for offer in group:
            price = count * offer["price_per_hour_usd"]
            key = (offer["provider"], offer["instance_type"], offer.get("region"))
            if key not in best or price < best[key][0]:
                best[key] = (price, offer, placed, count)
    ranked = sorted(best.values(), key=lambda c: (c[0], c[1]["provider"], c[1]["instance_type"]))[:top]
    return [_setup(price, offer, placed, count, gpus[offer["gpu_id"]], fmt, planner.arch)
            for price, offer, placed, count in ranked]


def setup_from_row(row: dict[str, Any]) -> Setup:
    """A ``cheapest_setups`` table row (DuckDB or the published Parquet) back as a Setup."""
    gpu = catalog().get(row["gpu_id"])
    return Setup(provider=row["provider"], source=row["source"], instance_type=row["instance_type"],
                 region=row["region"], gpu=row["gpu_id"], gpu_name=gpu.name if gpu else row["gpu_id"],
                 instances=row["instances"], gpus_per_instance=row["gpus_per_instance"], gpus=row["gpus"],
                 gpus_needed=row["gpus_needed"], tensor_parallel=row["tensor_parallel"],
                 pipeline_parallel=row["pipeline_parallel"], price_per_hour=row["price_per_hour"],
                 price_per_month=row["price_per_month"], price_per_gpu_hour=row["price_per_gpu_hour"],
                 currency_listed=row["currency_listed"], fx_date=row["fx_date"], allocation=row["allocation"],
                 format=row["format"], engine=row["engine"], verified_at=row["verified_at"],
                 **{k: row.get(k) for k in COST_FIELDS})


COST_FIELDS = ("decode_tokens_per_s", "max_concurrent_requests", "aggregate_tokens_per_s", "usd_per_million_tokens",
               "usd_per_million_tokens_batched")


def setup_costs(arch: Architecture, gpu: GPU, placed: Placement, price_per_hour: float) -> dict[str, Any]:
    """Decode rate and $/1M output tokens of a setup: one request, and the most requests of the planned context
    the plan holds at once (aggregate decode rate at that batch)."""
    speed = estimate(arch, gpu, default_engine(gpu), placed)
    batch = max(1, speed.max_concurrent_requests)
    batched = estimate(arch, gpu, default_engine(gpu), placed, batch=batch) if batch > 1 else speed
    single, aggregate = speed.decode_tokens_per_s, batched.aggregate_tokens_per_s
    return {"decode_tokens_per_s": round(single, 2) if single else None, "max_concurrent_requests": batch,
            "aggregate_tokens_per_s": round(aggregate, 2) if aggregate else None,
            "usd_per_million_tokens": round(per_million_tokens(price_per_hour, single), 4) if single else None,
            "usd_per_million_tokens_batched": round(per_million_tokens(price_per_hour, aggregate), 4)
            if aggregate else None}


def _setup(price: float, offer: dict[str, Any], placed: Placement, count: int, gpu: GPU, fmt: str,
           arch: Architecture | None = None) -> Setup:
    assert placed.gpus is not None and placed.plan is not None
    per_instance = int(offer["gpu_count"])
    return Setup(
        provider=offer["provider"], source=offer["source"], instance_type=offer["instance_type"],
        region=offer.get("region"), gpu=gpu.id, gpu_name=gpu.name, instances=count, gpus_per_instance=per_instance,
        gpus=count * per_instance, gpus_needed=placed.gpus, tensor_parallel=placed.plan.tensor_parallel,
        pipeline_parallel=placed.plan.pipeline_parallel, price_per_hour=round(price, 4),
        price_per_month=round(price * HOURS_PER_MONTH, 2), price_per_gpu_hour=round(price / (count * per_instance), 4),
        currency_listed=offer["currency"], fx_date=offer.get("fx_date"), allocation=offer["allocation"], format=fmt,
        engine=default_engine(gpu).id, verified_at=offer["verified_at"],
        **(setup_costs(arch, gpu, placed, round(price, 4)) if arch is not None else {}))


#: formats from most to least faithful; the overall list reports, for each rented configuration, the most faithful
#: format it can run, and leaves out the 2- and 3-bit mixes (they stay in the per-format Parquet table)
FIDELITY = ("native", "bf16", "fp8", "int8", "q8_0", "q6_k", "q5_k_m", "awq_int4", "nvfp4", "q4_k_m", "mxfp4",
            "iq4_xs")


def overall(setups: list[Setup], top: int = 5) -> list[Setup]:
    best: dict[tuple, Setup] = {}
    for s in setups:
        if s.format not in FIDELITY:
            continue
        key = (s.provider, s.instance_type, s.region, s.instances)
        if key not in best or FIDELITY.index(s.format) < FIDELITY.index(best[key].format):
            best[key] = s
    return sorted(best.values(), key=lambda x: (x.price_per_hour, FIDELITY.index(x.format)))[:top]
