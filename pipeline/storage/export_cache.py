"""Queries of the ``export_cache`` table: per model, the price-independent part of its published file (JSON
``payload``) under the key of the inputs it was computed from."""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import polars as pl

from pipeline.storage.loaders import insert_frame, transaction


def cached_payloads(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str, str]]:
    """model id -> (cache key, JSON payload) of every row."""
    return {m: (k, p) for m, k, p in con.execute("SELECT model_id, cache_key, payload FROM export_cache").fetchall()}


def replace(con: duckdb.DuckDBPyConnection, stale: Sequence[str], rows: pl.DataFrame) -> None:
    """Delete the rows of the ``stale`` models and of the models of ``rows`` (columns model_id, cache_key, payload,
    computed_at), then insert ``rows``: one transaction, one statement each (not two per model: 4,000 at 2,000
    models)."""
    with transaction(con):
        con.execute("DELETE FROM export_cache WHERE model_id IN (SELECT UNNEST(?::VARCHAR[]))",
                    [[*stale, *rows["model_id"].to_list()]])
        if rows.height:
            insert_frame(con, "export_cache", rows)
