"""Queries of the ``placement_cache`` table (sql/008: what the cheapest-setups planner learnt, by model revision,
GPU catalog row, scenario and sizing code). The key and value columns and the sizing code's version are the
planner's (``pipeline/compute/placement_cache.py``) and come in as parameters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb
import polars as pl

from pipeline.storage.loaders import registered

#: rows whose model is not at one of the given revisions or whose GPU row is not one of the given hashes, or of
#: other sizing code
_INVALID = ("sizing_version <> ? "
            "OR (model_id, revision) NOT IN (SELECT UNNEST(?::VARCHAR[]), UNNEST(?::VARCHAR[])) "
            "OR (gpu_id, gpu_row_hash) NOT IN (SELECT UNNEST(?::VARCHAR[]), UNNEST(?::VARCHAR[]))")


def valid_rows(con: duckdb.DuckDBPyConnection, columns: Sequence[str], sizing_version: str,
               models: dict[str, str], gpu_hashes: dict[str, str]) -> Any:  # noqa: ANN401 - a pyarrow Table
    """``columns`` of the rows of ``sizing_version`` for these models (id -> revision) and GPUs (id -> row hash),
    as an Arrow table (selected in SQL and read through Arrow: fetchall() and a filter in Python cost three times
    as much)."""
    valid = pl.DataFrame({"model_id": list(models), "revision": list(models.values())},
                         schema={"model_id": pl.String, "revision": pl.String})
    valid_gpus = pl.DataFrame({"gpu_id": list(gpu_hashes), "gpu_row_hash": list(gpu_hashes.values())},
                              schema={"gpu_id": pl.String, "gpu_row_hash": pl.String})
    with registered(con, "placement_cache_models", valid), registered(con, "placement_cache_gpus", valid_gpus):
        return con.sql(
            f"SELECT {', '.join(columns)} FROM placement_cache JOIN placement_cache_models "
            "USING (model_id, revision) JOIN placement_cache_gpus USING (gpu_id, gpu_row_hash) "
            "WHERE sizing_version = ?", params=[sizing_version]).to_arrow_table()


def prune(con: duckdb.DuckDBPyConnection, sizing_version: str, models: dict[str, str],
          gpu_hashes: dict[str, str]) -> int:
    """Delete the rows not valid for ``sizing_version``, these models (id -> revision) and GPU rows (id -> hash);
    rows deleted."""
    params = [sizing_version, list(models), list(models.values()), list(gpu_hashes), list(gpu_hashes.values())]
    stale = con.execute(f"SELECT count(*) FROM placement_cache WHERE {_INVALID}", params).fetchall()[0][0]
    if stale:
        con.execute(f"DELETE FROM placement_cache WHERE {_INVALID}", params)
    return stale


def delete_keys(con: duckdb.DuckDBPyConnection, keys: Any, key_columns: Sequence[str]) -> None:  # noqa: ANN401
    """Delete the rows whose ``key_columns`` are one of the rows of ``keys`` (an Arrow table of those columns)."""
    with registered(con, "placement_cache_keys", keys):
        con.execute(f"DELETE FROM placement_cache WHERE ({', '.join(key_columns)}) IN "
                    f"(SELECT {', '.join(key_columns)} FROM placement_cache_keys)")
