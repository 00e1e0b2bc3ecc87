"""Price history of a published snapshot, per UTC day: the cheapest $/GPU-hour each provider asked for a GPU, read from
the snapshot's ``price_observations/`` parts (every observation the pipeline kept) as any consumer would.

An observation counts when it was eligible when judged (the history's own ``eligible``, stamped by the quality
stage: not quarantined, not a merged duplicate, hourly, whole GPUs; staleness does not apply to the past), it rents
whole GPUs, has a provider, a time and a positive finite price, and its allocation is in the class asked for
(on-demand, or spot and marketplace prices). A NULL verdict means "not judged" and never counts.
``vramlab history`` prints it; the report's price board draws the same days (``pipeline/report/data.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.compute.price_days import day_summaries, like_for_like
from pipeline.sources.base import REFERENCE

ON_DEMAND = ("on_demand",)
SPOT_LIKE = ("spot", "interruptible", "preemptible", "marketplace", "marketplace_median", "bid_statistics")
#: each line with the reference prices that extend its history (a third party's record of the same class)
ON_DEMAND_HISTORY = ON_DEMAND + tuple(a for a, rentable in REFERENCE.items() if rentable in ON_DEMAND)
SPOT_LIKE_HISTORY = SPOT_LIKE + tuple(a for a, rentable in REFERENCE.items() if rentable in SPOT_LIKE)


def history_files(snapshot: Path) -> list[str]:
    return sorted(str(p) for p in (snapshot / "price_observations").glob("*/*.parquet"))


def daily_cheapest(snapshot: Path, gpus: tuple[str, ...], *, provider: str | None = None, days: int | None = None,
                   spot: bool = False) -> list[dict[str, Any]]:
    """Rows ``{day, provider, gpu_id, price, observations, instance_type}``: per UTC day and provider the cheapest
    eligible $/GPU-hour of any of ``gpus``, oldest day first then cheapest; ``days``: only the last N days up to
    the newest observation of these GPUs."""
    from pipeline.storage import snapshot_files

    files = history_files(snapshot)
    if not files:
        return []
    rows = snapshot_files.daily_cheapest(files, gpus, SPOT_LIKE_HISTORY if spot else ON_DEMAND_HISTORY, provider=provider, days=days)
    return [{"day": d.isoformat(), "provider": p, "gpu_id": g, "price": round(price, 4), "observations": n,
             "instance_type": it} for d, p, g, price, n, it in rows]


def by_day(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per day: the cheapest provider's price and name, the most expensive provider's cheapest price (the
    spread), how many providers were seen, which, and what changed against the previous day
    (:func:`pipeline.compute.price_days.day_summaries`)."""
    return day_summaries(rows)


def first_to_last(rows: list[dict[str, Any]], days: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last day's cheapest against the earliest day sharing a provider with it, over the providers both have
    (:func:`pipeline.compute.price_days.like_for_like`): a first day of other providers only (an old record of
    one cloud) is no baseline. The first listed day when none shares one; None with fewer than two days."""
    if len(days) < 2:
        return None
    names = set(days[-1]["providerList"])
    first = next((d for d in days[:-1] if names & set(d["providerList"])), days[0])
    return like_for_like(rows, first["day"], days[-1]["day"])


def model_cost_history(snapshot: Path, shapes: list[tuple[Any, ...]], *,
                       days: int | None = None) -> list[dict[str, Any]]:
    """Rows ``{day, provider, price_per_hour_usd, instance_type, gpu_id, instances, gpus_per_instance, format}``:
    per UTC day and provider, the cheapest on-demand $/h of running a model on one of its setup ``shapes``
    ((GPU, GPUs per instance, instances, format): :func:`published_shapes`, or the shapes `cheapest` plans for an
    unpublished load): the cheapest eligible whole-GPU observation of that day of an instance of that GPU and size,
    times the instances; a third party's per-GPU record of an on-demand price (instance type ``record: ...``)
    prices a shape of one instance of one GPU. The shapes are the top setups at today's prices: others are not
    priced on earlier days.
    Oldest day first, then cheapest; ``days``: only the last N days up to the newest."""
    from pipeline.storage import snapshot_files

    files = history_files(snapshot)
    if not files or not shapes:
        return []
    rows = snapshot_files.model_cost_days(files, shapes, days=days,
                                          references=[a for a in ON_DEMAND_HISTORY if a not in ON_DEMAND])
    return [{"day": d.isoformat(), "provider": p, "price": round(c, 4), "price_per_hour_usd": round(c, 4),
             "instance_type": it, "gpu_id": g, "instances": n, "gpus_per_instance": k, "format": f}
            for d, p, c, it, g, n, k, f in rows]


def published_shapes(snapshot: Path, model_id: str, context: int, concurrency: int) -> list[tuple[Any, ...]]:
    """The setup shapes (GPU, GPUs per instance, instances, format) ``cheapest_setups.parquet`` lists for
    ``model_id`` at the load (its on-demand lists), each in the most faithful format listed for it."""
    from pipeline.compute.answers import FIDELITY
    from pipeline.storage import snapshot_files

    setups = snapshot / "cheapest_setups.parquet"
    if not setups.exists():
        return []
    return snapshot_files.published_shapes(setups, model_id, context, concurrency, FIDELITY)


def published_loads(snapshot: Path, model_id: str) -> list[tuple[int, int]]:
    """The (context, concurrency) loads ``cheapest_setups.parquet`` answers for ``model_id``."""
    from pipeline.storage import snapshot_files

    setups = snapshot / "cheapest_setups.parquet"
    if not setups.exists():
        return []
    return [(int(c), int(k)) for c, k in snapshot_files.setup_loads(setups, model_id)]
