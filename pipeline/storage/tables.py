"""Queries the core and quality assets read for their metadata and checks, by the table they read. Every one
takes an open DuckDB connection and returns plain Python values."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import duckdb
import polars as pl

from pipeline.storage.loaders import PRICE_CEILING, UNMAPPED_CEILING, registered


def row_count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    return con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0]


# gpus -----------------------------------------------------------------------------------------------------------

def gpu_row_hashes(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """GPU id -> the hash of its catalog row."""
    return dict(con.execute("SELECT id, row_hash FROM gpus").fetchall())


# fetch_log ------------------------------------------------------------------------------------------------------

def ignored_rows_latest_fetch(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Per source, the rows of its latest fetch that are not GPU offers (CPU plans, other terms), by reason."""
    return dict(con.execute("""SELECT source, arg_max(ignored_reasons, started_at) FROM fetch_log
                               GROUP BY source HAVING arg_max(ignored, started_at) > 0
                               ORDER BY source""").fetchall())


# price_observations ---------------------------------------------------------------------------------------------

def implausible_prices(con: duckdb.DuckDBPyConnection, loaded: Sequence[tuple[str, datetime]],
                       limit: int = 20) -> list[tuple[Any, ...]]:
    """Observations of the fetches ``loaded`` ((source, observed_at) pairs) priced at or below zero, or above the
    ceiling of their GPU's kind per GPU-hour (``loaders.PRICE_CEILING``, ``UNMAPPED_CEILING`` for no GPU)."""
    if not loaded:
        return []
    ceilings = " ".join(f"WHEN g.kind = '{k}' THEN {v}" for k, v in PRICE_CEILING.items())
    this_run = pl.DataFrame({"source": [s for s, _ in loaded], "observed_at": [t for _, t in loaded]})
    with registered(con, "this_run", this_run):
        return con.execute(f"""
            SELECT o.offer_key, o.price_per_gpu_hour_usd
            FROM price_observations o JOIN this_run r USING (source, observed_at)
                 LEFT JOIN gpus g ON g.id = o.gpu_id
            WHERE o.price_per_hour_usd <= 0 OR o.price_per_gpu_hour_usd >
                  CASE {ceilings} ELSE {UNMAPPED_CEILING} END LIMIT {int(limit)}""").fetchall()


def duplicate_observations(con: duckdb.DuckDBPyConnection, limit: int = 20) -> list[tuple[Any, ...]]:
    return con.execute(f"""SELECT source, offer_key, observed_at, count(*) FROM price_observations
                           GROUP BY ALL HAVING count(*) > 1 LIMIT {int(limit)}""").fetchall()


def observations_per_source(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    return dict(con.execute("SELECT source, count(*) FROM price_observations GROUP BY source").fetchall())


# offers_current -------------------------------------------------------------------------------------------------

def current_prices(con: duckdb.DuckDBPyConnection, listed_only: bool = False) -> dict[str, float]:
    """offer key -> $/h of every current offer (``listed_only``: without those the source no longer lists)."""
    where = " WHERE NOT removed" if listed_only else ""
    return dict(con.execute(f"SELECT offer_key, price_per_hour_usd FROM offers_current{where}").fetchall())


def latest_fx_date(con: duckdb.DuckDBPyConnection) -> str | None:
    """The newest ECB rate date any current offer was converted with (None: no converted offer)."""
    return con.execute("SELECT max(fx_date) FROM offers_current").fetchall()[0][0]


def unconfirmed_jumps(con: duckdb.DuckDBPyConnection, limit: int = 20) -> list[tuple[Any, ...]]:
    return con.execute("SELECT offer_key, previous_price_usd, price_per_hour_usd FROM offers_current "
                       f"WHERE jump_unconfirmed LIMIT {int(limit)}").fetchall()


def cheapest_on_demand_per_gpu(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    """Before the quality stage: per GPU the cheapest listed, fresh, whole-GPU on-demand offer (price, provider,
    instance type, region, verified at), cheapest first."""
    return con.execute("""
        SELECT gpu_id, min(price_per_gpu_hour_usd) AS p, arg_min(provider, price_per_gpu_hour_usd),
               arg_min(instance_type, price_per_gpu_hour_usd), arg_min(region, price_per_gpu_hour_usd),
               arg_min(verified_at, price_per_gpu_hour_usd)
        FROM offers_current WHERE gpu_id IS NOT NULL AND allocation = 'on_demand' AND NOT stale AND NOT removed
             AND NOT jump_unconfirmed AND NOT fractional
        GROUP BY gpu_id ORDER BY p""").fetchall()


# gpu_price_reference, offer_quality -----------------------------------------------------------------------------

def price_reference_with_cheapest(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    """Per GPU its price reference (providers, offers, median, band, min, max) and the cheapest eligible
    on-demand offer a setup may use (price, who)."""
    return con.execute("""
        WITH cheapest AS (
            SELECT gpu_id, min(price_per_gpu_hour_usd) AS p,
                   arg_min(canonical_provider || ' ' || instance_type, price_per_gpu_hour_usd) AS who
            FROM offers_judged WHERE eligible AND allocation_class = 'on_demand' GROUP BY gpu_id)
        SELECT r.gpu_id, r.providers, r.offers, r.median_gpu_hour_usd, r.band_low_usd, r.band_high_usd,
               r.min_gpu_hour_usd, r.max_gpu_hour_usd, c.p, c.who
        FROM gpu_price_reference r LEFT JOIN cheapest c USING (gpu_id) ORDER BY r.gpu_id""").fetchall()


def quarantined_examples(con: duckdb.DuckDBPyConnection, limit: int = 50) -> list[tuple[Any, ...]]:
    """One quarantined offer per source, GPU and reasons."""
    return con.execute(f"""
        SELECT source, instance_type, region, gpu_id, allocation_class, price_per_gpu_hour_usd,
               ratio_to_reference, array_to_string(reasons, ', ')
        FROM offer_quality WHERE quarantined
        QUALIFY row_number() OVER (PARTITION BY source, gpu_id, reasons ORDER BY offer_key) = 1
        ORDER BY source, gpu_id LIMIT {int(limit)}""").fetchall()


# models ---------------------------------------------------------------------------------------------------------

def model_ids(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute("SELECT id FROM models").fetchall()}
