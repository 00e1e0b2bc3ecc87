"""Reads of the ``offers_judged`` view (sql/020: ``offers_current`` with the quality stage's verdict and the one
definition of ``eligible``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the CLI's fit imports this module through offer_groups and must not load DuckDB
    import duckdb

#: the eligible offers as a setup search rents them: the canonical provider and the allocation class in place of
#: the source's own labels
_ELIGIBLE = """SELECT * REPLACE (canonical_provider AS provider, allocation_class AS allocation)
               FROM offers_judged WHERE eligible ORDER BY offer_key"""


def eligible_rows(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """The eligible current offers, one dict per offer (column -> value), by offer key."""
    cursor = con.execute(_ELIGIBLE)
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]


def eligible_arrow(con: duckdb.DuckDBPyConnection) -> Any:  # noqa: ANN401 - a pyarrow Table
    """The same rows as :func:`eligible_rows`, as an Arrow table."""
    return con.sql(_ELIGIBLE).to_arrow_table()


#: what ``vramlab gpus`` lists (pipeline/exports/snapshot_offers.py ``current_offers``, on-demand): an eligible offer
#: (the ``offers_judged`` view, sql/020) the source labels on-demand. The Dagster table ``cheapest_gpu_hour`` uses the
#: same predicate and order, so the UI and the CLI name the same cheapest offer per GPU.
_CHEAPEST_ELIGIBLE = """
SELECT gpu_id, price_per_gpu_hour_usd, provider, instance_type, region, verified_at, source
FROM offers_judged
WHERE eligible AND allocation = 'on_demand'
QUALIFY row_number() OVER (PARTITION BY gpu_id ORDER BY price_per_gpu_hour_usd, price_per_hour_usd,
                                                       provider, instance_type, region, offer_key) = 1
ORDER BY price_per_gpu_hour_usd, gpu_id
"""


def cheapest_eligible_per_gpu(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    """(gpu_id, $/GPU-hour, provider, instance type, region, verified_at, source) of the cheapest offer per GPU
    that a user could rent on demand (the quality stage's verdict applied), cheapest first."""
    return con.execute(_CHEAPEST_ELIGIBLE).fetchall()
