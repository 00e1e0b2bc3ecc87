"""The ``cheapest_setups`` table for every tracked model, computed and written a chunk of models at a time.

What the step holds in memory is one chunk's placement-cache rows and setups rows, whatever the number of models
(#28: with 2,000 models the cache is ~1.9 M rows and the table ~280 k; loaded whole they took ~4 GiB). The table
is still replaced in one transaction (a reader sees the old setups or the new ones, never a mix), and the
placement cache is pruned of rows no longer valid once per run, then read and written chunk by chunk.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import polars as pl

from pipeline.compute.placement_cache import PlacementCache
from pipeline.compute.setups import (
    FIDELITY,
    MULTI_MACHINE_RANK_FACTOR,
    ON_DEMAND,
    SETUP_COLUMNS,
    SPOT_LIKE,
    OfferGroups,
    Planner,
    Setup,
    cheapest_setups,
    eligible_offers,
    overall,
    setup_from_row,
    setup_values,
)
from pipeline.compute.tracked import Tracked
from pipeline.storage.loaders import insert_frame, transaction
from sizing_core.formats import WEIGHT_FORMATS
from sizing_core.gpus import catalog
from sizing_core.placement import ContextTooLongError, check_context

SETUP_FORMATS = ("native", *(f for f in WEIGHT_FORMATS if f != "fp16"))
TOP = 5
#: setups per overall list in a model file
OVERALL_TOP = 5
#: the scenario every setup is planned for: one request of this many tokens, BF16 KV cache
SETUP_CONTEXT = 8192
#: models per chunk (about 700 placement-cache rows and 140 setups rows per model)
SETUP_CHUNK_MODELS = 50


@dataclass
class SetupsRun:
    """What one run of the table did: rows written, each model's cheapest on-demand row (the UI's table), models
    without setups and why, and the placement cache's hits and misses summed over the chunks."""

    rows: int = 0
    best: dict[str, dict[str, Any]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    hits: dict[str, int] = field(default_factory=lambda: {"floor": 0, "placement": 0, "rates": 0})
    misses: dict[str, int] = field(default_factory=lambda: {"floor": 0, "placement": 0, "rates": 0})
    loaded: int = 0  # valid cache rows read
    written: int = 0  # cache rows written
    pruned: int = 0  # cache rows dropped (other code, revisions, GPU rows, untracked models)
    computed_models: set[str] = field(default_factory=set)
    computed_gpus: set[str] = field(default_factory=set)

    def add(self, cache: PlacementCache, written: int) -> None:
        for kind in self.hits:
            self.hits[kind] += cache.hits[kind]
            self.misses[kind] += cache.misses[kind]
        self.loaded += cache.read
        self.written += written
        self.computed_models |= cache.computed_models
        self.computed_gpus |= cache.computed_gpus


#: the columns :func:`model_setup_rows` fills, in its rows' order
ROW_COLUMNS = ("model_id", "list", "rank", "computed_at", *SETUP_COLUMNS)
#: DuckDB column types of ``cheapest_setups`` as polars types (the frame inserted is typed, not inferred)
_POLARS_TYPES = {"VARCHAR": pl.String, "INTEGER": pl.Int32, "BIGINT": pl.Int64, "DOUBLE": pl.Float64,
                 "BOOLEAN": pl.Boolean, "TIMESTAMP WITH TIME ZONE": pl.Datetime("us", "UTC"), "DATE": pl.Date,
                 "VARCHAR[]": pl.List(pl.String)}


def model_setup_rows(t: Tracked, lists: tuple[tuple[str, tuple[str, ...], OfferGroups], ...],
                     cache: PlacementCache, *, as_of: datetime, now: datetime) -> list[tuple[Any, ...]]:
    """Every ``cheapest_setups`` row of one model (values in :data:`ROW_COLUMNS` order): per format and list, its
    top setups in rank order."""
    assert t.arch is not None and t.revision is not None
    rows = []
    for fmt in SETUP_FORMATS:
        planner = Planner(t.arch, fmt, SETUP_CONTEXT, 1, "bf16", cache=cache, model=(t.entry.id, t.revision))
        for list_name, allocations, grouped in lists:
            for rank, s in enumerate(cheapest_setups(t.arch, fmt, grouped, top=TOP, allocations=allocations,
                                                     planner=planner, as_of=as_of)):
                rows.append((t.entry.id, list_name, rank + 1, now, *setup_values(s)))
    return rows


def _row_schema(con: Any) -> dict[str, Any]:
    types = dict(con.execute("SELECT column_name, data_type FROM information_schema.columns "
                             "WHERE table_name = 'cheapest_setups'").fetchall())
    return {c: _POLARS_TYPES[types[c]] for c in ROW_COLUMNS}


def write_cheapest_setups(con: Any, tracked: list[Tracked], *, as_of: datetime, now: datetime,
                          chunk: int = SETUP_CHUNK_MODELS) -> SetupsRun:
    """Replace ``cheapest_setups`` with the setups of ``tracked`` (models with an architecture), ``chunk`` models
    at a time. A model that cannot hold one request of :data:`SETUP_CONTEXT` tokens (its maximum context is
    shorter, as for many small Hub models) gets no setups and a reason, instead of failing the step."""
    offers = eligible_offers(con)
    lists = (("on_demand", ON_DEMAND, OfferGroups(offers, ON_DEMAND)),
             ("spot", SPOT_LIKE, OfferGroups(offers, SPOT_LIKE)))  # grouped once for every model (perf #14)
    gpus = catalog()
    run = SetupsRun()
    schema = _row_schema(con)
    price = ROW_COLUMNS.index("price_per_hour")
    with transaction(con):
        con.execute("DELETE FROM cheapest_setups")
        run.pruned = PlacementCache.prune(con, {t.entry.id: t.revision for t in tracked}, gpus)
        for i in range(0, len(tracked), chunk):
            part = tracked[i:i + chunk]
            # placements, floors and decode rates of unchanged models on unchanged GPU rows, from earlier runs
            cache = PlacementCache.load(con, {t.entry.id: t.revision for t in part}, gpus)
            rows: list[dict[str, Any]] = []
            for t in part:
                try:
                    check_context(t.arch, SETUP_CONTEXT)
                except ContextTooLongError as exc:
                    run.skipped[t.entry.id] = str(exc)
                    continue
                found = model_setup_rows(t, lists, cache, as_of=as_of, now=now)
                cheapest = min((r for r in found if r[1] == "on_demand"), key=lambda r: r[price], default=None)
                if cheapest is not None:
                    run.best[t.entry.id] = dict(zip(ROW_COLUMNS, cheapest, strict=True))
                rows += found
            if rows:
                insert_frame(con, "cheapest_setups", pl.DataFrame(rows, schema=schema, orient="row"), by_name=True)
            run.rows += len(rows)
            run.add(cache, cache.save(con))
    return run


#: the rows that can be in a model's overall lists (:func:`~pipeline.compute.setups.overall`), found in DuckDB so
#: that only those are read back as records (#28: ~10 of ~140 rows per model). Both filters are exact or err on
#: the side of keeping a row: ``overall`` takes, per (provider, instance type, region, instances), the row of the
#: most faithful format (an integer order, compared exactly here), then the 5 cheapest by rank price (the price,
#: x1.25 over several machines; a row more than 1e-3 USD/h above the 5th such price cannot be among them). Python
#: then picks exactly as before from what is left.
_OVERALL_CANDIDATES = """
WITH ranked AS (
    SELECT * EXCLUDE (computed_at, verified_at), timezone('UTC', verified_at) AS verified_at,
           list_position(?::VARCHAR[], format) AS fidelity,
           price_per_hour * CASE WHEN coalesce(nullif(nodes, 0), instances) > 1 THEN ? ELSE 1.0 END AS rank_price
    FROM cheapest_setups
    WHERE model_id IN (SELECT UNNEST(?::VARCHAR[])) AND list_contains(?::VARCHAR[], format)
), winners AS (
    SELECT * FROM ranked
    QUALIFY fidelity = min(fidelity) OVER (PARTITION BY model_id, list, provider, instance_type, region, instances)
)
SELECT * EXCLUDE (fidelity, rank_price) FROM winners
QUALIFY rank_price <= coalesce(nth_value(rank_price, ?) OVER (
    PARTITION BY model_id, list ORDER BY rank_price ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING),
    'inf'::DOUBLE) + 1e-3
ORDER BY model_id, list, format, rank
"""


def read_overall(con: Any, model_ids: list[str]) -> dict[str, tuple[list[Setup], list[Setup]]]:
    """Per model of ``model_ids``: its overall on-demand and spot lists (:func:`overall` of its stored rows).

    ``verified_at`` is read as UTC wall time and marked UTC here: DuckDB converting TIMESTAMPTZ values to the
    session's time zone one by one was a third of this read (#28), and the session's zone is the machine's (the
    Parquet files pin UTC the same way)."""
    cursor = con.execute(_OVERALL_CANDIDATES, [list(FIDELITY), MULTI_MACHINE_RANK_FACTOR, model_ids, list(FIDELITY),
                                               OVERALL_TOP])
    cols = [d[0] for d in cursor.description]
    lists: dict[str, tuple[list[Setup], list[Setup]]] = {}
    for values in cursor.fetchall():
        row = dict(zip(cols, values, strict=True))
        row["verified_at"] = row["verified_at"].replace(tzinfo=UTC)
        model_lists = lists.setdefault(row["model_id"], ([], []))
        (model_lists[0] if row["list"] == "on_demand" else model_lists[1]).append(setup_from_row(row))
    return {m: (overall(od, OVERALL_TOP), overall(sp, OVERALL_TOP)) for m, (od, sp) in lists.items()}


class StoredSetups:
    """The overall setups lists of the models in ``order``, read from ``cheapest_setups`` ``chunk`` models at a time
    as they are asked for (``get``, like a dict's): only one chunk's Setup records live at once (#28: the whole
    table read back as records was ~280 k of them for 2,000 models)."""

    def __init__(self, con: Any, order: list[str], chunk: int = 4 * SETUP_CHUNK_MODELS):
        self.con, self.order, self.chunk = con, order, max(1, chunk)
        self.position = {m: i for i, m in enumerate(order)}
        self.ids: set[str] = set()
        self.lists: dict[str, tuple[list[Setup], list[Setup]]] = {}

    def get(self, model_id: str, default: Any = None) -> Any:  # noqa: ANN401 - a dict's get
        if model_id not in self.ids:
            i = self.position.get(model_id)
            ids = self.order[i:i + self.chunk] if i is not None else [model_id]
            self.lists, self.ids = read_overall(self.con, ids), set(ids)
        return self.lists.get(model_id, default)
