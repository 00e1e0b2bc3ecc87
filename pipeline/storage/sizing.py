"""Queries of the ``sizing`` grid table (model x format x context x GPU x engine): what is stored and from which
code, and the deletes that make room for recomputed rows (the rows themselves are written with
``loaders.insert_frame``)."""

from __future__ import annotations

from collections.abc import Sequence

import duckdb


def models_done(con: duckdb.DuckDBPyConnection, sizing_version: str) -> dict[str, str]:
    """model id -> revision of the models all of whose rows come from ``sizing_version`` and one revision."""
    return dict(con.execute("SELECT model_id, any_value(revision) FROM sizing GROUP BY model_id "
                            "HAVING bool_and(sizing_version = ?) AND count(DISTINCT revision) = 1",
                            [sizing_version]).fetchall())


def gpu_hashes_done(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """GPU id -> the catalog row hash its rows were sized from."""
    return dict(con.execute("SELECT DISTINCT gpu_id, gpu_row_hash FROM sizing").fetchall())


def stored_models(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {m for (m,) in con.execute("SELECT DISTINCT model_id FROM sizing").fetchall()}


def keep_only(con: duckdb.DuckDBPyConnection, models: Sequence[str], gpus: Sequence[str]) -> None:
    """Delete the rows of every model not in ``models`` and of every GPU not in ``gpus``."""
    con.execute("DELETE FROM sizing WHERE model_id NOT IN (SELECT UNNEST(?::VARCHAR[]))", [list(models)])
    con.execute("DELETE FROM sizing WHERE gpu_id NOT IN (SELECT UNNEST(?::VARCHAR[]))", [list(gpus)])


def delete_models(con: duckdb.DuckDBPyConnection, models: Sequence[str]) -> None:
    con.execute("DELETE FROM sizing WHERE model_id IN (SELECT UNNEST(?::VARCHAR[]))", [list(models)])


def delete_cells(con: duckdb.DuckDBPyConnection, gpus: Sequence[str], models: Sequence[str]) -> None:
    """Delete the rows of these GPUs for these models."""
    con.execute("DELETE FROM sizing WHERE gpu_id IN (SELECT UNNEST(?::VARCHAR[])) AND model_id IN "
                "(SELECT UNNEST(?::VARCHAR[]))", [list(gpus), list(models)])


def replace_from_parquet(con: duckdb.DuckDBPyConnection, files: Sequence[str]) -> None:
    """Replace every row by the rows of these Parquet files (inside the caller's transaction)."""
    con.execute("DELETE FROM sizing")
    if files:
        con.execute("INSERT INTO sizing SELECT * FROM read_parquet(?)", [list(files)])


def single_gpu_formats(con: duckdb.DuckDBPyConnection, context: int,
                       engines: dict[str, str]) -> list[tuple[str, str, list[str]]]:
    """(model id, GPU id, formats) of the cells that fit on one GPU at ``context`` tokens with the GPU's engine in
    ``engines`` (GPU id -> engine id), grouped in DuckDB (2,000 models have 1.5 M such cells at 8K, too many to
    fetch one tuple each)."""
    return con.execute(
        "SELECT model_id, gpu_id, list(format) FROM sizing WHERE context = ? AND fits_single "
        "AND (gpu_id, engine) IN (SELECT UNNEST(?::VARCHAR[]), UNNEST(?::VARCHAR[])) GROUP BY ALL",
        [context, list(engines), list(engines.values())]).fetchall()
