"""Queries over Parquet files the pipeline wrote (a published snapshot's tables, its ``price_observations/``
history parts, an offers part), each read by a DuckDB connection of its own, in memory. Paths and values are
bound parameters: a path with a quote in it is still just a path."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb


@contextmanager
def _memory() -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect()
    try:
        yield con
    finally:
        con.close()


def describe(path: str | Path) -> list[tuple[Any, ...]]:
    """DuckDB's ``DESCRIBE`` of a Parquet file: (column, type, null, key, default, extra) per column."""
    with _memory() as con:
        return con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(path)]).fetchall()


def row_count(cur: duckdb.DuckDBPyConnection, path: str | Path) -> int:
    """Rows of one Parquet file (read by ``cur``, a connection the caller holds)."""
    return cur.execute("SELECT count(*) FROM read_parquet(?)", [str(path)]).fetchall()[0][0]


def offer_rows(path: str | Path) -> list[dict[str, Any]]:
    """Every row of an offers file (column -> value), by offer key."""
    with _memory() as con:
        cursor = con.execute("SELECT * FROM read_parquet(?) ORDER BY offer_key", [str(path)])
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]


# offers_current.parquet -----------------------------------------------------------------------------------------

def offers_summary(path: str | Path, gpus: Sequence[str]
                   ) -> tuple[list[tuple[str, int]], int | None, list[tuple[str, float, str]]]:
    """Of a published ``offers_current.parquet``: (allocation, listed fresh offers) most first; the quarantined
    offers (None when the file has no verdict column); (GPU, cheapest eligible on-demand $/GPU-hour, its provider)
    of each of ``gpus`` with such an offer (none when the file has no ``eligible`` column)."""
    source = [str(path)]
    with _memory() as con:
        columns = {r[0] for r in con.execute("DESCRIBE SELECT * FROM read_parquet(?)", source).fetchall()}
        per_alloc = con.execute("SELECT allocation, count(*) FROM read_parquet(?) WHERE NOT stale AND NOT removed "
                                "GROUP BY 1 ORDER BY 2 DESC", source).fetchall()
        quarantined = (con.execute("SELECT count(*) FROM read_parquet(?) WHERE quarantined", source).fetchall()[0][0]
                       if "quarantined" in columns else None)
        cheapest = con.execute("""SELECT gpu_id, min(price_per_gpu_hour_usd), arg_min(provider, price_per_gpu_hour_usd)
                                  FROM read_parquet(?) WHERE eligible
                                  AND allocation = 'on_demand' AND gpu_id IN (SELECT UNNEST(?::VARCHAR[]))
                                  GROUP BY 1""", [*source, list(gpus)]).fetchall() if "eligible" in columns else []
    return [(a, n) for a, n in per_alloc], quarantined, cheapest


# price_observations/ parts and cheapest_setups.parquet ----------------------------------------------------------

def daily_cheapest(files: Sequence[str], gpus: Sequence[str], allocations: Sequence[str], *, provider: str | None,
                   days: int | None) -> list[tuple[Any, ...]]:
    """(day, provider, GPU, price, observations, instance type): per UTC day and provider the cheapest eligible
    whole-GPU $/GPU-hour of the history parts ``files`` among ``gpus`` and ``allocations``, oldest day first then
    cheapest; ``provider``: that provider only (any case); ``days``: the last N days up to the newest. A NULL (or
    absent) verdict means "not judged": never counted as eligible."""
    with _memory() as con:
        stamped = {r[0] for r in con.execute("DESCRIBE SELECT * FROM read_parquet(?, hive_partitioning = false)",
                                             [list(files)]).fetchall()}
        verdict = "coalesce(h.eligible, false)" if "eligible" in stamped else "false"
        return con.execute(f"""
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
                           [list(files), list(gpus), list(allocations), provider, provider, days, days]).fetchall()


def published_shapes(setups: str | Path, model_id: str, context: int, concurrency: int,
                     fidelity: Sequence[str]) -> list[tuple[Any, ...]]:
    """(GPU, GPUs per instance, instances, format): the setup shapes a ``cheapest_setups.parquet`` lists for
    ``model_id`` at the load on its on-demand lists, each in the most faithful format (first in ``fidelity``; any
    other after them) its rows show."""
    with _memory() as con:
        return con.execute("""
            SELECT gpu_id, gpus_per_instance, instances,
                   arg_min(format, coalesce(list_position(?::VARCHAR[], format), 1000)) AS format
            FROM read_parquet(?) WHERE model_id = ? AND context = ? AND concurrency = ? AND list = 'on_demand'
            GROUP BY ALL ORDER BY ALL""", [list(fidelity), str(setups), model_id, context, concurrency]).fetchall()


def model_cost_days(files: Sequence[str], shapes: Sequence[tuple[Any, ...]], *, days: int | None,
                    references: Sequence[str] = ()) -> list[tuple[Any, ...]]:
    """(day, provider, cost, instance type, GPU, instances, GPUs per instance, format): per UTC day and provider
    the cheapest on-demand $/h of a setup of one of ``shapes`` ((GPU, GPUs per instance, instances, format), as
    :func:`published_shapes` gives them), priced from the eligible whole-GPU observations of the history parts
    ``files``: instance $/h x instances, and a per-GPU record of an allocation in ``references`` prices the shape
    of one instance of one GPU (a record names no instance size or fabric); oldest day first, then cheapest;
    ``days``: the last N days up to the newest."""
    columns = list(zip(*shapes, strict=True)) if shapes else [[], [], [], []]
    with _memory() as con:
        return con.execute("""
            WITH shapes AS (
                SELECT unnest(?::VARCHAR[]) AS gpu_id, unnest(?::BIGINT[]) AS gpus_per_instance,
                       unnest(?::BIGINT[]) AS instances, unnest(?::VARCHAR[]) AS format),
            obs AS (
                SELECT (h.observed_at AT TIME ZONE 'UTC')::DATE AS day, h.provider, h.instance_type, h.gpu_id,
                       h.gpu_count, h.price_per_hour_usd, h.allocation
                FROM read_parquet(?, hive_partitioning = false) h
                WHERE h.provider IS NOT NULL AND h.observed_at IS NOT NULL AND isfinite(h.price_per_hour_usd)
                  AND h.price_per_hour_usd > 0 AND NOT coalesce(h.fractional, false) AND coalesce(h.eligible, false)
                  AND (h.allocation = 'on_demand' OR list_contains(?::VARCHAR[], h.allocation))),
            priced AS (
                SELECT o.day, o.provider, o.instance_type, o.gpu_id, s.instances, s.gpus_per_instance, s.format,
                       o.price_per_hour_usd * s.instances AS cost
                FROM obs o JOIN shapes s ON o.gpu_id = s.gpu_id AND o.gpu_count = s.gpus_per_instance
                WHERE o.allocation = 'on_demand' OR (s.gpus_per_instance = 1 AND s.instances = 1)),
            kept AS (SELECT * FROM priced WHERE ? IS NULL OR day > (SELECT max(day) FROM priced) - ?::INTEGER)
            SELECT day, provider, min(cost), arg_min(instance_type, cost), arg_min(gpu_id, cost),
                   arg_min(instances, cost), arg_min(gpus_per_instance, cost), arg_min(format, cost)
            FROM kept GROUP BY day, provider ORDER BY day, min(cost), provider""",
                           [*(list(c) for c in columns), list(files), list(references), days,
                            days]).fetchall()


def setup_loads(setups: str | Path, model_id: str) -> list[tuple[int, int]]:
    """The (context, concurrency) loads a ``cheapest_setups.parquet`` answers for ``model_id``."""
    with _memory() as con:
        return con.execute("SELECT DISTINCT context, concurrency FROM read_parquet(?) WHERE model_id = ? "
                           "ORDER BY ALL", [str(setups), model_id]).fetchall()
