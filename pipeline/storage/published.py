"""Queries that read the DuckDB tables in their published shape (names and types of the data dictionary,
``pipeline/exports/tables.py``), for the snapshot's Parquet files and the price history's parts. The dictionary's
column expressions come in as parameters; the statements around them live here."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import TYPE_CHECKING, Any

from pipeline.storage.db import table_columns

if TYPE_CHECKING:
    import duckdb

#: the UTC date of an observation, whatever the session time zone
_DAY = "(observed_at AT TIME ZONE 'UTC')::DATE"


def select_list(columns: Sequence[tuple[str, str, str]]) -> str:
    """The select list of (expression, published SQL type, published name) columns, each cast to its type."""
    return "SELECT " + ", ".join(f'CAST({expr} AS {sql_type}) AS "{name}"' for expr, sql_type, name in columns)


def _ordered(row_order: tuple[str, ...] | None) -> str:
    return f" ORDER BY {', '.join(row_order)}" if row_order else ""


def table_query(select: str, db_table: str, row_order: tuple[str, ...] | None = None) -> str:
    """``select`` (a :func:`select_list`) over one DuckDB table or view, in ``row_order`` (published columns)."""
    return f"{select} FROM {db_table}{_ordered(row_order)}"


def sizing_query(select: str, row_order: tuple[str, ...] | None = None) -> str:
    """``select`` over ``sizing`` (as ``s``) with the exact planner's cells of this run (the registered view
    ``exact_cells``, as ``x``) joined on the cell, in ``row_order`` (published columns)."""
    return (f"{select} FROM sizing s LEFT JOIN exact_cells x ON x.model_id = s.model_id AND x.format = s.format "
            f"AND x.context = s.context AND x.gpu_id = s.gpu_id AND x.engine = s.engine{_ordered(row_order)}")


def sizing_reason(cur: duckdb.DuckDBPyConnection) -> str:
    """Why ``est_gpus`` is null, as an expression of :func:`sizing_query`: the exact planner's reason for the cells
    it computed, else the grid's own column when the grid provides one, else what the grid's flags say."""
    grid = ("s.est_gpus_reason" if "est_gpus_reason" in table_columns(cur, "sizing") else
            "CASE WHEN NOT s.runs THEN 'engine_cannot_run_format' WHEN s.above_max_context THEN 'above_max_context' "
            "ELSE 'no_plan_within_max_gpus' END")
    return ("CASE WHEN x.model_id IS NOT NULL THEN x.exact_reason "
            f"WHEN s.est_gpus IS NULL THEN {grid} END")


def arrow_batches(cur: duckdb.DuckDBPyConnection, query: str, params: list | None, rows: int) -> Any:  # noqa: ANN401
    """The result of ``query`` as an Arrow record batch reader of ``rows`` rows per batch (streamed, never whole)."""
    return cur.sql(query, params=params).to_arrow_reader(rows)


# price_observations, as history parts ---------------------------------------------------------------------------

def observation_days(cur: duckdb.DuckDBPyConnection) -> list[date]:
    """The UTC days that have observations, oldest first (``cur``: a UTC cursor)."""
    return [r[0] for r in cur.execute(f"SELECT DISTINCT {_DAY} FROM price_observations ORDER BY 1").fetchall()]


def _unexported(day: date, parts: Sequence[str]) -> tuple[str, list[Any]]:
    """The filter of ``day``'s observations that are judged (a NULL verdict waits for the quality stage: parts are
    never rewritten, so a part must not fix "not judged" for good) and in none of the Parquet files ``parts``; the
    day and the parts are bound parameters: no path or value is ever spliced into SQL text."""
    where, params = f"{_DAY} = ? AND p.eligible IS NOT NULL", [day]
    if parts:
        where += (" AND NOT EXISTS (SELECT 1 FROM read_parquet(?) h "
                  "WHERE h.offer_key = p.offer_key AND h.observed_at = p.observed_at)")
        params.append(list(parts))
    return where, params


def unexported_count(cur: duckdb.DuckDBPyConnection, day: date, parts: Sequence[str]) -> int:
    """How many of ``day``'s judged observations are in none of ``parts``."""
    where, params = _unexported(day, parts)
    return cur.execute(f"SELECT count(*) FROM price_observations p WHERE {where}", params).fetchall()[0][0]


def unexported_query(select: str, day: date, parts: Sequence[str]) -> tuple[str, list[Any]]:
    """``select`` over ``day``'s judged observations (as ``p``) that are in none of ``parts``, by time and offer,
    and its parameters."""
    where, params = _unexported(day, parts)
    return f"{select} FROM price_observations p WHERE {where} ORDER BY observed_at, offer_key", params
