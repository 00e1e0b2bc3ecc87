"""Queries of the ``cheapest_setups`` table (per model and load, the ranked deployments) and of the
``weight_bytes_cache`` that prunes their search (per model revision, format and sizing code, the weights' bytes).
The rows themselves are written with ``loaders.insert_frame``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb

from pipeline.storage import step_inputs


def column_types(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """column -> DuckDB type of ``cheapest_setups``."""
    return dict(con.execute("SELECT column_name, data_type FROM information_schema.columns "
                            "WHERE table_name = 'cheapest_setups'").fetchall())


def clear(con: duckdb.DuckDBPyConnection) -> None:
    """Empty the table, and drop the record of the inputs its rows were computed from (``step_inputs``): only
    the writer that fills it again from known inputs records them anew."""
    con.execute("DELETE FROM cheapest_setups")
    step_inputs.forget(con, "cheapest_setups")


#: the rows that can be in a model's overall lists (:func:`~pipeline.compute.answers.overall`), found in DuckDB so
#: that only those are read back as records (a few dozen of ~300 rows per model). Both filters are exact or
#: err on the side of keeping a row: ``overall`` takes, per list (list, load, sort) and rented configuration
#: (provider, instance type, instances, price), the row of the most faithful format (an integer order, compared
#: exactly here; a list holds one row per configuration and format), then the 5 lowest by rank value (by price the
#: price, by cost per token the cost at the load, each x1.25 over several machines; a row more than 1e-3 above the
#: 5th such value cannot be among them; rows without a cost at the load are not in a cost-per-token list;
#: llama.cpp RPC chains rank after every other row, as ``overall`` ranks them). Python
#: then picks exactly as before from what is left.
_OVERALL_CANDIDATES = """
WITH ranked AS (
    SELECT * EXCLUDE (computed_at, verified_at), timezone('UTC', verified_at) AS verified_at,
           list_position(?::VARCHAR[], format) AS fidelity,
           CASE WHEN sort = 'per_token' THEN usd_per_million_tokens_at_load ELSE price_per_hour END
           * CASE WHEN coalesce(nullif(nodes, 0), instances) > 1 THEN ? ELSE 1.0 END
           + CASE WHEN deployment = 'llama.cpp-rpc' THEN 1e12 ELSE 0.0 END AS rank_value
    FROM cheapest_setups
    WHERE model_id IN (SELECT UNNEST(?::VARCHAR[])) AND list_contains(?::VARCHAR[], format)
      AND (sort <> 'per_token' OR usd_per_million_tokens_at_load IS NOT NULL)
), winners AS (
    SELECT * FROM ranked
    QUALIFY fidelity = min(fidelity) OVER (
        PARTITION BY model_id, list, context, concurrency, sort, provider, instance_type, instances, price_per_hour)
)
SELECT * EXCLUDE (fidelity, rank_value) FROM winners
QUALIFY rank_value <= coalesce(nth_value(rank_value, ?) OVER (
    PARTITION BY model_id, list, context, concurrency, sort ORDER BY rank_value
    ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING), 'inf'::DOUBLE) + 1e-3
ORDER BY model_id, list, context, concurrency, sort, format, rank
"""


def overall_candidates(con: duckdb.DuckDBPyConnection, models: Sequence[str], *, fidelity: Sequence[str],
                       multi_machine_factor: float, top: int) -> list[dict[str, Any]]:
    """The candidate rows of these models' overall lists, one dict per row (``verified_at`` as UTC wall time,
    without a zone): ``fidelity`` is the formats from most to least faithful, ``multi_machine_factor`` what a
    setup over several machines ranks at, ``top`` the length of a list."""
    cursor = con.execute(_OVERALL_CANDIDATES, [list(fidelity), multi_machine_factor, list(models), list(fidelity),
                                               top])
    cols = [d[0] for d in cursor.description]
    return [dict(zip(cols, values, strict=True)) for values in cursor.fetchall()]


# weight_bytes_cache ---------------------------------------------------------------------------------------------

def weight_bytes(con: duckdb.DuckDBPyConnection, sizing_version: str,
                 models: Sequence[str]) -> list[tuple[str, str, str, float, float]]:
    """(model, revision, format, total bytes, active bytes) of these models' rows from ``sizing_version``."""
    return con.execute("SELECT model_id, revision, format, total_bytes, active_bytes FROM weight_bytes_cache WHERE "
                       "sizing_version = ? AND model_id IN (SELECT UNNEST(?::VARCHAR[]))",
                       [sizing_version, list(models)]).fetchall()


def replace_weight_bytes(con: duckdb.DuckDBPyConnection, rows: Sequence[tuple[str, str, str, str, float, float]]
                         ) -> None:
    """Write rows (model, revision, format, sizing version, total, active) in place of those models' formats."""
    if not rows:
        return
    con.execute("DELETE FROM weight_bytes_cache WHERE (model_id, format) IN (SELECT UNNEST(?::VARCHAR[]), "
                "UNNEST(?::VARCHAR[]))", [[r[0] for r in rows], [r[2] for r in rows]])
    con.executemany("INSERT INTO weight_bytes_cache VALUES (?, ?, ?, ?, ?, ?)", list(rows))


def prune_weight_bytes(con: duckdb.DuckDBPyConnection, sizing_version: str,
                       revisions: Sequence[tuple[str, str]]) -> None:
    """Drop the rows of other sizing code and of models not at one of these (model id, revision) pairs."""
    con.execute("DELETE FROM weight_bytes_cache WHERE sizing_version <> ? OR (model_id, revision) NOT IN "
                "(SELECT UNNEST(?::VARCHAR[]), UNNEST(?::VARCHAR[]))",
                [sizing_version, [m for m, _ in revisions], [r for _, r in revisions]])
