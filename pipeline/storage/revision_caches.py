"""Queries of the derived caches whose rows hold while a model's revision, a GPU's catalog row and the sizing code
are unchanged: ``placement_cache`` (sql/008: what the cheapest-setups planner learnt) and ``serving_cache``
(sql/025: what a layout does at a load). Both tables carry ``model_id``, ``revision``, ``gpu_id``, ``gpu_row_hash``
and ``sizing_version``; their key and value columns and the sizing code's version are the compute side's
(``pipeline/compute/placement_cache.py``, ``serving_cache.py``) and come in as parameters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import duckdb
import polars as pl

from pipeline.storage.loaders import registered

CacheTable = Literal["placement_cache", "serving_cache"]
_TABLES = ("placement_cache", "serving_cache")

#: rows whose model is not at one of the given revisions or whose GPU row is not one of the given hashes, or of
#: other sizing code
_INVALID = ("sizing_version <> ? "
            "OR (model_id, revision) NOT IN (SELECT UNNEST(?::VARCHAR[]), UNNEST(?::VARCHAR[])) "
            "OR (gpu_id, gpu_row_hash) NOT IN (SELECT UNNEST(?::VARCHAR[]), UNNEST(?::VARCHAR[]))")


def _table(table: CacheTable) -> str:
    if table not in _TABLES:  # the name is written into the SQL text
        raise ValueError(f"not a revision-keyed cache table: {table!r}")
    return table


def valid_rows(con: duckdb.DuckDBPyConnection, table: CacheTable, columns: Sequence[str], sizing_version: str,
               models: dict[str, str], gpu_hashes: dict[str, str]) -> Any:  # noqa: ANN401 - a pyarrow Table
    """``columns`` of the rows of ``sizing_version`` for these models (id -> revision) and GPUs (id -> row hash),
    as an Arrow table (selected in SQL and read through Arrow: fetchall() and a filter in Python cost three times
    as much)."""
    name = _table(table)
    valid = pl.DataFrame({"model_id": list(models), "revision": list(models.values())},
                         schema={"model_id": pl.String, "revision": pl.String})
    valid_gpus = pl.DataFrame({"gpu_id": list(gpu_hashes), "gpu_row_hash": list(gpu_hashes.values())},
                              schema={"gpu_id": pl.String, "gpu_row_hash": pl.String})
    with registered(con, f"{name}_models", valid), registered(con, f"{name}_gpus", valid_gpus):
        return con.sql(
            f"SELECT {', '.join(columns)} FROM {name} JOIN {name}_models USING (model_id, revision) "
            f"JOIN {name}_gpus USING (gpu_id, gpu_row_hash) WHERE sizing_version = ?",
            params=[sizing_version]).to_arrow_table()


def prune(con: duckdb.DuckDBPyConnection, table: CacheTable, sizing_version: str, models: dict[str, str],
          gpu_hashes: dict[str, str]) -> int:
    """Delete the rows not valid for ``sizing_version``, these models (id -> revision) and GPU rows (id -> hash);
    rows deleted."""
    name = _table(table)
    params = [sizing_version, list(models), list(models.values()), list(gpu_hashes), list(gpu_hashes.values())]
    stale = con.execute(f"SELECT count(*) FROM {name} WHERE {_INVALID}", params).fetchall()[0][0]
    if stale:
        con.execute(f"DELETE FROM {name} WHERE {_INVALID}", params)
    return stale


def delete_keys(con: duckdb.DuckDBPyConnection, table: CacheTable, keys: Any,  # noqa: ANN401 - a pyarrow Table
                key_columns: Sequence[str]) -> None:
    """Delete the rows whose ``key_columns`` are one of the rows of ``keys`` (an Arrow table of those columns)."""
    name = _table(table)
    with registered(con, f"{name}_keys", keys):
        con.execute(f"DELETE FROM {name} WHERE ({', '.join(key_columns)}) IN "
                    f"(SELECT {', '.join(key_columns)} FROM {name}_keys)")


def write_delta(con: duckdb.DuckDBPyConnection, table: CacheTable, delta: tuple[Any, Any] | None,
                key_columns: Sequence[str], columns: Sequence[str]) -> int:
    """Write a cache's delta, (keys of rows a run completed, rows added or completed) as Arrow tables, inside the
    caller's transaction: the completed rows' old versions deleted, the rows inserted by name; rows written."""
    from pipeline.storage.loaders import insert_frame

    if delta is None:
        return 0
    completed, rows = delta
    if completed.num_rows:
        delete_keys(con, table, completed, key_columns)
    if rows.num_rows:
        insert_frame(con, _table(table), rows, columns=tuple(columns), by_name=True)
    return rows.num_rows
