"""The ``cheapest_setups`` table for every tracked model, computed and written a chunk of models at a time.

What the step holds in memory is one chunk's placement-cache rows and setups rows, whatever the number of models
(with 2,000 models the cache is ~2 M rows; loaded whole it took ~4 GiB). The table is still replaced in one
transaction (a reader sees the old setups or the new ones, never a mix), and the placement cache is pruned of rows
no longer valid once per run, then read and written chunk by chunk. Every model is answered at its standard loads
(:func:`~pipeline.compute.answers.standard_loads`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import pyarrow as pa

from pipeline.compute.answers import (
    FIDELITY,
    PUBLISHED,
    SETUP_COLUMNS,
    TOP,
    Load,
    overall,
    setup_from_row,
    setup_values,
    standard_loads,
)
from pipeline.compute.offer_groups import ON_DEMAND, SPOT_LIKE, OfferGroups, eligible_offers
from pipeline.compute.placement_cache import PlacementCache, gpu_row_hash, sizing_version
from pipeline.compute.rates import known_weight_bytes, remember_weight_bytes
from pipeline.compute.service_setups import floor_setups, practical_setups
from pipeline.compute.serving_cache import ServingCache
from pipeline.compute.setups import MULTI_MACHINE_RANK_FACTOR, Planner, Setup
from pipeline.compute.tracked import Tracked
from pipeline.compute.workers import in_workers
from pipeline.storage import cheapest_setups, step_inputs
from pipeline.storage.loaders import arrow_rows, insert_frame, transaction
from pipeline.storage.tables import row_count
from sizing_core.formats import WEIGHT_FORMATS
from sizing_core.gpus import catalog
from sizing_core.memo import forget_models
from sizing_core.placement.search import ContextTooLongError

SETUP_FORMATS = ("native", *(f for f in WEIGHT_FORMATS if f != "fp16"))
#: setups per overall list in a model file
OVERALL_TOP = 5
#: models per chunk (about 3,000 placement-cache rows and 300 setups rows per model at the standard loads)
SETUP_CHUNK_MODELS = 50


@dataclass
class SetupsRun:
    """What one run of the table did: rows written, each model's cheapest on-demand row of the published question
    (the UI's table), models without setups and why, and the placement cache's hits and misses over the chunks."""

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
    #: the serving cache's (``serving_cache.py``) lookups answered from the table / computed, per kind, and its rows
    serving_hits: dict[str, int] = field(default_factory=lambda: {"serving": 0, "bound": 0})
    serving_misses: dict[str, int] = field(default_factory=lambda: {"serving": 0, "bound": 0})
    serving_loaded: int = 0
    serving_written: int = 0
    serving_pruned: int = 0
    #: when the table kept was computed: this run's inputs were those of that run (:func:`refresh_cheapest_setups`)
    kept_since: datetime | None = None

    def add(self, cache: PlacementCache, written: int) -> None:
        for kind in self.hits:
            self.hits[kind] += cache.hits[kind]
            self.misses[kind] += cache.misses[kind]
        self.loaded += cache.read
        self.written += written
        self.computed_models |= cache.computed_models
        self.computed_gpus |= cache.computed_gpus

    def add_serving(self, cache: ServingCache, written: int) -> None:
        for kind in self.serving_hits:
            self.serving_hits[kind] += cache.hits[kind]
            self.serving_misses[kind] += cache.misses[kind]
        self.serving_loaded += cache.read
        self.serving_written += written


#: the columns :func:`model_setup_rows` fills, in its rows' order
ROW_COLUMNS = ("model_id", "list", "rank", "computed_at", "sort", *SETUP_COLUMNS)
#: DuckDB column types of ``cheapest_setups`` as Arrow types (a chunk's rows are typed, not inferred, and built in
#: the worker that computed them: pyarrow is fork-safe, polars is not)
_ARROW_TYPES = {"VARCHAR": pa.string(), "INTEGER": pa.int32(), "BIGINT": pa.int64(), "DOUBLE": pa.float64(),
                "BOOLEAN": pa.bool_(), "TIMESTAMP WITH TIME ZONE": pa.timestamp("us", tz="UTC"), "DATE": pa.date32(),
                "VARCHAR[]": pa.list_(pa.string())}


def model_setup_rows(t: Tracked, on_demand: OfferGroups, spot: OfferGroups, cache: PlacementCache | None, *,
                     as_of: datetime, now: datetime, served: ServingCache | None = None) -> list[tuple[Any, ...]]:
    """Every ``cheapest_setups`` row of one model (values in :data:`ROW_COLUMNS` order): at each standard load, by
    cost per token (most faithful format per configuration); at the published load (8K x 1) a list per format,
    on-demand and spot, by price; at every other load the overall list by price; at every load the cheapest
    on-demand setups meeting the default interactive floor (``sort = 'floor'``; ``served``: what earlier runs
    served of its layouts)."""
    assert t.arch is not None and t.revision is not None
    model = (t.entry.id, t.revision)
    rows = []
    for load in standard_loads(t.arch.max_context):
        planners = {f: Planner(t.arch, f, load.context, load.concurrency, "bf16", cache=cache, model=model)
                    for f in SETUP_FORMATS}
        questions: list[tuple[str, OfferGroups, str, Any]] = [("on_demand", on_demand, "per_token", FIDELITY)]
        if load == PUBLISHED:  # the published question: a list per format, on-demand and spot
            questions += [(name, grouped, "price", fmt) for fmt in SETUP_FORMATS
                          for name, grouped in (("on_demand", on_demand), ("spot", spot))]
        else:  # every other load: the overall answer (most faithful format per configuration)
            questions.append(("on_demand", on_demand, "price", FIDELITY))
        for list_name, grouped, sort, formats in questions:
            wanted = (formats,) if isinstance(formats, str) else formats
            found = practical_setups(t.arch, formats, grouped, context=load.context, concurrency=load.concurrency,
                                     top=TOP, allocations=grouped.allocations,
                                     planner={f: planners[f] for f in planners if f in wanted}, as_of=as_of,
                                     sort=sort)  # type: ignore[arg-type]
            rows += [(t.entry.id, list_name, rank + 1, now, sort, *setup_values(s)) for rank, s in enumerate(found)]
        # the cheapest meeting the default interactive floor at the load's standard workload (served lazily)
        found = floor_setups(t.arch, on_demand, load.context, load.concurrency, planners, as_of=as_of, top=TOP,
                             cache=served, model=model)
        rows += [(t.entry.id, "on_demand", rank + 1, now, "floor", *setup_values(s)) for rank, s in enumerate(found)]
    return rows


def _row_schema(con: Any) -> pa.Schema:
    types = cheapest_setups.column_types(con)
    return pa.schema([(c, _ARROW_TYPES[types[c]]) for c in ROW_COLUMNS])


def _read_weight_bytes(con: Any, part: list[Tracked]) -> list[tuple[str, str, float, float]]:
    """The chunk's rows of ``weight_bytes_cache`` for this revision and this code: (model, format, total, active)."""
    revisions = {t.entry.id: t.revision for t in part}
    found = cheapest_setups.weight_bytes(con, sizing_version(), list(revisions))
    return [(m, fmt, total, active) for m, revision, fmt, total, active in found if revisions[m] == revision]


@dataclass
class Chunk:
    """What computing one chunk of models gives, ready to write: its table rows (an Arrow table), each model's
    cheapest published row, models without setups and why, the placement-cache rows it added or completed
    (:meth:`PlacementCache.delta`; the cache itself kept for its counters) and the weight bytes it computed
    (model, format, total, active). No polars frame: its thread pool is not safe in a forked worker."""

    rows: pa.Table
    best: dict[str, dict[str, Any]]
    skipped: dict[str, str]
    cache: PlacementCache
    delta: tuple[pa.Table, pa.Table] | None
    weights: list[tuple[str, str, float, float]]
    served: ServingCache | None = None  # its counters; its new rows travel as served_delta
    served_delta: tuple[pa.Table, pa.Table] | None = None


def compute_chunk(part: list[Tracked], on_demand: OfferGroups, spot: OfferGroups, cache: PlacementCache,
                  seeds: list[tuple[str, str, float, float]], schema: pa.Schema, *, as_of: datetime,
                  now: datetime, served: ServingCache | None = None) -> Chunk:
    """Every ``cheapest_setups`` row of ``part`` (no I/O: the caller reads the caches and seeds and writes the
    result), the pruning bounds' weight bytes seeded from ``seeds`` (:func:`_read_weight_bytes`); ``schema``: the
    table's columns (:func:`_row_schema`); ``served``: the serving cache's rows for ``part``."""
    archs = {t.entry.id: t for t in part}
    seeded = set()
    for model_id, fmt, total, active in seeds:
        if (t := archs.get(model_id)) is not None and t.arch is not None:
            remember_weight_bytes(t.arch, fmt, (total, active))
            seeded.add((model_id, fmt))
    price, sort = ROW_COLUMNS.index("price_per_hour"), ROW_COLUMNS.index("sort")
    context, concurrency = ROW_COLUMNS.index("context"), ROW_COLUMNS.index("concurrency")
    how = ROW_COLUMNS.index("deployment")
    rows: list[tuple[Any, ...]] = []
    best: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    for t in part:
        try:
            found = model_setup_rows(t, on_demand, spot, cache, as_of=as_of, now=now, served=served)
        except ContextTooLongError as exc:
            skipped[t.entry.id] = str(exc)
            continue
        cheapest = min((r for r in found if r[1] == "on_demand" and r[sort] == "price" and (
            r[context], r[concurrency]) == (PUBLISHED.context, PUBLISHED.concurrency)),
            key=lambda r: (r[how] == "llama.cpp-rpc", r[price]), default=None)  # RPC chains last, as listed
        if cheapest is not None:
            best[t.entry.id] = dict(zip(ROW_COLUMNS, cheapest, strict=True))
        rows += found
    weights = [(t.entry.id, fmt, *value) for t in part for fmt in SETUP_FORMATS
               if t.arch is not None and (value := known_weight_bytes(t.arch, fmt)) is not None
               and (t.entry.id, fmt) not in seeded]
    return Chunk(arrow_rows(rows, schema), best, skipped, cache, cache.delta(), weights, served,
                 None if served is None else served.delta())


def _save_weight_bytes(con: Any, part: list[Tracked], computed: list[tuple[str, str, float, float]]) -> None:
    """Write the chunk's weight bytes this run computed (inside the caller's transaction)."""
    version, revisions = sizing_version(), {t.entry.id: t.revision for t in part}
    rows = [(m, revisions[m], fmt, version, total, active) for m, fmt, total, active in computed]
    cheapest_setups.replace_weight_bytes(con, rows)


def _chunk_job(shared: tuple[list[Tracked], OfferGroups, OfferGroups, pa.Schema, datetime, datetime],
               start: int, stop: int, cache: Any, seeds: list[tuple[str, str, float, float]],
               served: Any) -> Chunk:  # noqa: ANN401 - the caches' rows as Arrow tables
    """:func:`compute_chunk` of models ``start:stop`` (in a worker process: ``shared`` is what it forked with),
    from the cache rows the step read; the cache handed back holds its counters only (its new rows travel as the
    chunk's delta). The chunk's per-model memos are dropped after it: no later chunk asks about its models, and a
    worker given a thousand models would otherwise hold hundreds of MiB of them."""
    tracked, on_demand, spot, schema, as_of, now = shared
    done = compute_chunk(tracked[start:stop], on_demand, spot, PlacementCache.from_table(cache), seeds, schema,
                         as_of=as_of, now=now, served=ServingCache.from_table(served))
    done.cache.rows, done.cache.loaded = {}, set()
    if done.served is not None:
        done.served.rows, done.served.loaded = {}, set()
    forget_models()
    return done


def write_cheapest_setups(con: Any, tracked: list[Tracked], *, as_of: datetime, now: datetime,
                          chunk: int = SETUP_CHUNK_MODELS, workers: int = 1,
                          offers: list[dict[str, Any]] | None = None, inputs_digest: str | None = None) -> SetupsRun:
    """Replace ``cheapest_setups`` with the setups of ``tracked`` (models with an architecture), ``chunk`` models
    at a time. A model none of whose loads can be planned gets no setups and a reason, instead of failing the
    step. With ``workers`` > 1 and more than one chunk, chunks are computed by that many processes forked from this
    one (:func:`~pipeline.compute.workers.in_workers`); this process reads each chunk's cache rows, writes the
    results in chunk order and is the only one that touches DuckDB, so the table is the same either way.
    ``offers``: the eligible offers when the caller has read them; ``inputs_digest``: theirs and the other inputs'
    (:func:`setups_inputs_digest`), recorded with the table in the same transaction, else the record dropped."""
    offers = eligible_offers(con) if offers is None else offers
    on_demand, spot = OfferGroups(offers, ON_DEMAND), OfferGroups(offers, SPOT_LIKE)  # once for every model
    gpus = catalog()
    run = SetupsRun()
    schema = _row_schema(con)
    bounds = [(i, min(i + chunk, len(tracked))) for i in range(0, len(tracked), chunk)]
    with transaction(con):
        cheapest_setups.clear(con)
        run.pruned = PlacementCache.prune(con, {t.entry.id: t.revision for t in tracked}, gpus)
        cheapest_setups.prune_weight_bytes(con, sizing_version(), [(t.entry.id, t.revision) for t in tracked])
        run.serving_pruned = ServingCache.prune(con, {t.entry.id: t.revision for t in tracked}, gpus)
        # each chunk's placements, floors, rates, weight bytes and servings of earlier runs, read as its job is
        # handed out
        jobs = ((start, stop, PlacementCache.read_table(con, revisions, gpus), _read_weight_bytes(con, part),
                 ServingCache.read_table(con, revisions, gpus))
                for start, stop in bounds
                for part in [tracked[start:stop]] for revisions in [{t.entry.id: t.revision for t in part}])
        shared = (tracked, on_demand, spot, schema, as_of, now)
        for (start, stop), done in zip(bounds, in_workers(_chunk_job, jobs, shared, min(workers, len(bounds))),
                                       strict=True):
            if done.rows.num_rows:
                insert_frame(con, "cheapest_setups", done.rows, by_name=True)
            run.rows += done.rows.num_rows
            run.best |= done.best
            run.skipped |= done.skipped
            run.add(done.cache, PlacementCache.write(con, done.delta))
            _save_weight_bytes(con, tracked[start:stop], done.weights)
            if done.served is not None:
                run.add_serving(done.served, ServingCache.write(con, done.served_delta))
        if inputs_digest:  # else the record stays dropped (``clear``): no digest describes these rows
            best = {m: {k: v for k, v in row.items() if k != "computed_at"} for m, row in run.best.items()}
            summary = json.dumps({"rows": run.rows, "best": best, "skipped": run.skipped}, default=str,
                                 sort_keys=True)  # what the inputs gave, not when: the same inputs, the same text
            step_inputs.record(con, OUTPUT, inputs_digest, summary, now)
    return run


#: the table whose inputs ``step_inputs`` records (sql/026)
OUTPUT = "cheapest_setups"


@lru_cache(maxsize=1)
def setups_code_version() -> str:
    """The code the table is computed by: the sizing code (:func:`sizing_version`), every module of this
    package (the planner, the answers' shape, the service-level search, the offer groups, the fabrics) and the
    cluster fabrics' table they read (``fabric.INTERCONNECT_TABLE``)."""
    from pipeline.compute.fabric import INTERCONNECT_TABLE

    digest = hashlib.sha256(sizing_version().encode())
    for path in [*sorted(Path(__file__).resolve().parent.glob("*.py")), INTERCONNECT_TABLE]:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def setups_inputs_digest(con: Any, tracked: list[Tracked], offers: list[dict[str, Any]], as_of: datetime) -> str:
    """A digest of everything the table is computed from: the eligible offers (every column, verification times
    included), the tracked models at their revisions, the GPU catalog's rows, the code, the table's columns and
    the as-of date (a price converted with an older ECB rate is flagged by its age in days)."""
    digest = hashlib.sha256()
    for part in (setups_code_version(), as_of.date().isoformat(),
                 sorted((t.entry.id, t.revision or "") for t in tracked if t.arch is not None),
                 sorted((g, gpu_row_hash(gpu)) for g, gpu in catalog().items()),
                 sorted(cheapest_setups.column_types(con).items()), offers):
        digest.update(json.dumps(part, default=str, sort_keys=True).encode())
        digest.update(b"\0")
    return digest.hexdigest()


def refresh_cheapest_setups(con: Any, tracked: list[Tracked], *, as_of: datetime, now: datetime,
                            workers: int = 1) -> SetupsRun:
    """The step ``out__cheapest_setups``: :func:`write_cheapest_setups`, unless the table holds what these very
    inputs give (:func:`setups_inputs_digest` equal to the one recorded with it, in ``step_inputs``): then the
    table is kept, with the computed_at of the run that computed it, and that run's report (rows, each model's
    cheapest published row, models without setups) is returned with ``kept_since``."""
    offers = eligible_offers(con)
    digest = setups_inputs_digest(con, tracked, offers, as_of)
    found = step_inputs.recorded(con, OUTPUT)
    if found is not None and found[0] == digest:
        summary = json.loads(found[1])
        if summary["rows"] == row_count(con, OUTPUT):
            return SetupsRun(rows=summary["rows"], best=summary["best"], skipped=summary["skipped"],
                             kept_since=found[2])
    return write_cheapest_setups(con, tracked, as_of=as_of, now=now, workers=workers, offers=offers,
                                 inputs_digest=digest)


Answers = tuple[list[Setup], list[Setup], list[dict[str, Any]]]


def published_answers(rows: list[dict[str, Any]], loads: dict[str, list[Load]]) -> dict[str, Answers]:
    """Per model of ``loads`` (its standard loads): the overall on-demand and spot lists of the published question
    (8K x 1, by price) and, per standard load, the overall lists by price and by cost per token
    (``cheapestSetupsByLoad``), from its ``cheapest_setups`` rows."""
    lists: dict[tuple, list] = {}
    for row in rows:
        key = (row["model_id"], row["list"], row.get("context") or 8192, row.get("concurrency") or 1,
               row.get("sort") or "price")
        lists.setdefault(key, []).append(setup_from_row(row))
    out: dict[str, Answers] = {}
    first = (PUBLISHED.context, PUBLISHED.concurrency)
    for m, model_loads in loads.items():
        by_load = [{"context": load.context, "concurrency": load.concurrency, "label": load.label,
                    "byPrice": overall(lists.get((m, "on_demand", load.context, load.concurrency, "price"), []),
                                       OVERALL_TOP),
                    "byCostPerToken": overall(lists.get((m, "on_demand", load.context, load.concurrency,
                                                         "per_token"), []), OVERALL_TOP, sort="per_token"),
                    "atDefaultFloor": overall(lists.get((m, "on_demand", load.context, load.concurrency, "floor"),
                                                        []), OVERALL_TOP)}
                   for load in model_loads]
        out[m] = (overall(lists.get((m, "on_demand", *first, "price"), []), OVERALL_TOP),
                  overall(lists.get((m, "spot", *first, "price"), []), OVERALL_TOP), by_load)
    return out


def loads_of(tracked: list[Tracked]) -> dict[str, list[Load]]:
    """The standard loads of every model with an architecture, in ``tracked``'s order."""
    return {t.entry.id: standard_loads(t.arch.max_context) for t in tracked if t.arch is not None}


def read_overall(con: Any, loads: dict[str, list[Load]]) -> dict[str, Answers]:
    """:func:`published_answers` of the models of ``loads`` from their candidate rows only.

    ``verified_at`` is read as UTC wall time and marked UTC here: DuckDB converting TIMESTAMPTZ values to the
    session's time zone one by one was a third of this read, and the session's zone is the machine's (the
    Parquet files pin UTC the same way)."""
    rows = cheapest_setups.overall_candidates(con, list(loads), fidelity=FIDELITY,
                                              multi_machine_factor=MULTI_MACHINE_RANK_FACTOR, top=OVERALL_TOP)
    for row in rows:
        row["verified_at"] = row["verified_at"].replace(tzinfo=UTC)
    return published_answers(rows, loads)


class StoredSetups:
    """The overall setups lists of the models of ``loads`` (in its order), read from ``cheapest_setups`` ``chunk``
    models at a time as they are asked for (``get``, like a dict's): only one chunk's Setup records live at once
    (the whole table read back as records was ~600 k of them for 2,000 models)."""

    def __init__(self, con: Any, loads: dict[str, list[Load]], chunk: int = 4 * SETUP_CHUNK_MODELS):
        self.con, self.loads, self.chunk = con, loads, max(1, chunk)
        self.order = list(loads)
        self.position = {m: i for i, m in enumerate(self.order)}
        self.ids: set[str] = set()
        self.lists: dict[str, Answers] = {}

    def get(self, model_id: str, default: Any = None) -> Any:  # noqa: ANN401 - a dict's get
        if model_id not in self.position:
            return default
        if model_id not in self.ids:
            i = self.position[model_id]
            ids = self.order[i:i + self.chunk]
            self.lists = read_overall(self.con, {m: self.loads[m] for m in ids})
            self.ids = set(ids)
        return self.lists.get(model_id, default)
