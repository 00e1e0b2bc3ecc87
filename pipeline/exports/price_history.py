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
    import duckdb

    files = history_files(snapshot)
    if not files:
        return []
    con = duckdb.connect()
    stamped = {r[0] for r in con.execute("DESCRIBE SELECT * FROM read_parquet(?, hive_partitioning = false)",
                                         [files]).fetchall()}
    # a NULL (or absent) verdict means "not judged": never counted as eligible
    verdict = "coalesce(h.eligible, false)" if "eligible" in stamped else "false"
    allocations = list(SPOT_LIKE_HISTORY if spot else ON_DEMAND_HISTORY)
    rows = con.execute(f"""
        WITH obs AS (
            SELECT (h.observed_at AT TIME ZONE 'UTC')::DATE AS day, h.provider, h.gpu_id, h.instance_type,
                   h.price_per_gpu_hour_usd AS price
            FROM read_parquet(?, hive_partitioning = false) h
            WHERE h.provider IS NOT NULL AND h.observed_at IS NOT NULL AND isfinite(h.price_per_gpu_hour_usd)
              AND h.gpu_id IN (SELECT UNNEST(?::VARCHAR[])) AND NOT coalesce(h.fractional, false)
              AND h.allocation IN (SELECT UNNEST(?::VARCHAR[])) AND h.price_per_gpu_hour_usd > 0
              AND {verdict}
              AND (? IS NULL OR lower(h.provider) = lower(?))),
        kept AS (SELECT * FROM obs WHERE ? IS NULL OR day > (SELECT max(day) FROM obs) - ?::INTEGER)
        SELECT day, provider, arg_min(gpu_id, price), min(price), count(*), arg_min(instance_type, price)
        FROM kept GROUP BY day, provider ORDER BY day, min(price), provider""",
                       [files, list(gpus), allocations, provider, provider, days, days]).fetchall()
    con.close()
    return [{"day": d.isoformat(), "provider": p, "gpu_id": g, "price": round(price, 4), "observations": n,
             "instance_type": it} for d, p, g, price, n, it in rows]


def by_day(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per day: the cheapest provider's price and name, the most expensive provider's cheapest price (the
    spread), how many providers were seen, which, and what changed against the previous day
    (:func:`pipeline.compute.price_days.day_summaries`)."""
    return day_summaries(rows)


def first_to_last(rows: list[dict[str, Any]], days: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The first and the last day's cheapest over the providers both days have
    (:func:`pipeline.compute.price_days.like_for_like`); None with fewer than two days."""
    if len(days) < 2:
        return None
    return like_for_like(rows, days[0]["day"], days[-1]["day"])


def model_cost_history(snapshot: Path, model_id: str, context: int, concurrency: int, *,
                       days: int | None = None) -> list[dict[str, Any]]:
    """Rows ``{day, provider, price_per_hour_usd, instance_type, gpu_id, instances, gpus_per_instance, format}``:
    per UTC day and provider, the cheapest on-demand $/h of running ``model_id`` at ``context`` x ``concurrency``
    as the snapshot's ``cheapest_setups.parquet`` answers that load: over the setup shapes it lists (GPU, GPUs per
    instance, instances; on-demand list; the format of the shape's best-ranked row), the cheapest eligible whole-GPU observation of that day of an
    instance of that GPU and size, times the instances. Shapes that are not among the published setups today are
    not priced on earlier days (the published list is the top setups of today's prices). Oldest day first, then
    cheapest; ``days``: only the last N days up to the newest."""
    import duckdb

    files = history_files(snapshot)
    setups = snapshot / "cheapest_setups.parquet"
    if not files or not setups.exists():
        return []
    con = duckdb.connect()
    rows = con.execute("""
        WITH shapes AS (
            SELECT gpu_id, gpus_per_instance, instances, arg_min(format, rank) AS format
            FROM read_parquet(?) WHERE model_id = ? AND context = ? AND concurrency = ? AND list = 'on_demand'
            GROUP BY ALL),
        obs AS (
            SELECT (h.observed_at AT TIME ZONE 'UTC')::DATE AS day, h.provider, h.instance_type, h.gpu_id,
                   h.gpu_count, h.price_per_hour_usd
            FROM read_parquet(?, hive_partitioning = false) h
            WHERE h.provider IS NOT NULL AND h.observed_at IS NOT NULL AND isfinite(h.price_per_hour_usd)
              AND h.price_per_hour_usd > 0 AND h.allocation = 'on_demand' AND NOT coalesce(h.fractional, false)
              AND coalesce(h.eligible, false)),
        priced AS (
            SELECT o.day, o.provider, o.instance_type, o.gpu_id, s.instances, s.gpus_per_instance, s.format,
                   o.price_per_hour_usd * s.instances AS cost
            FROM obs o JOIN shapes s ON o.gpu_id = s.gpu_id AND o.gpu_count = s.gpus_per_instance),
        kept AS (SELECT * FROM priced WHERE ? IS NULL OR day > (SELECT max(day) FROM priced) - ?::INTEGER)
        SELECT day, provider, min(cost), arg_min(instance_type, cost), arg_min(gpu_id, cost),
               arg_min(instances, cost), arg_min(gpus_per_instance, cost), arg_min(format, cost)
        FROM kept GROUP BY day, provider ORDER BY day, min(cost), provider""",
                       [str(setups), model_id, context, concurrency, files, days, days]).fetchall()
    con.close()
    return [{"day": d.isoformat(), "provider": p, "price": round(c, 4), "price_per_hour_usd": round(c, 4),
             "instance_type": it, "gpu_id": g, "instances": n, "gpus_per_instance": k, "format": f}
            for d, p, c, it, g, n, k, f in rows]


def published_loads(snapshot: Path, model_id: str) -> list[tuple[int, int]]:
    """The (context, concurrency) loads ``cheapest_setups.parquet`` answers for ``model_id``."""
    import duckdb

    setups = snapshot / "cheapest_setups.parquet"
    if not setups.exists():
        return []
    con = duckdb.connect()
    out = con.execute("SELECT DISTINCT context, concurrency FROM read_parquet(?) WHERE model_id = ? ORDER BY ALL",
                      [str(setups), model_id]).fetchall()
    con.close()
    return [(int(c), int(k)) for c, k in out]
