"""The partitioned graph: the refresh split into one step per price source and one per model, each
writing a Parquet part where many writers are safe, and single consolidation steps that own the DuckDB file.

    parts__models         discovery: registers the tracked models as dynamic partitions (after raw_hub__models,
                          core__models)
    parts__prices[src]    fetch, land and parse one source; part = its fetch-log entry and offers (static)
    parts__offers         consolidation 1 (DuckDB writer): every source's newest part into fetch_log and
                          price_observations, offers_current and offer_quality rebuilt, the eligible offers
                          written as a part for the model steps
    parts__sizing[model]  one model's sizing grid; part = its rows (dynamic)
    parts__setups[model]  one model's cheapest setups on the eligible-offers part (dynamic)
    parts__publish        consolidation 2 (DuckDB writer): every tracked model's parts into sizing and
                          cheapest_setups, then the snapshot exactly as out__exports publishes it

Partition steps never open DuckDB: they run side by side in separate processes (or on Celery workers, the parts
folder on shared storage). The consolidation steps are in the ``duckdb`` pool like every DuckDB writer. Jobs hold
one partitions definition each (Dagster's rule), so the graph runs as five jobs in order:
``pipeline/ops/partitioned.py`` (``vramlab parts run``) runs them; the UI and ``dagster`` CLI can run each.
"""

import time
from datetime import UTC, datetime
from typing import Any

import dagster as dg
import polars as pl
from dagster_duckdb import DuckDBResource

from pipeline.assets.core import POOL, code_version, core__gpus, core__models
from pipeline.assets.metadata import table
from pipeline.assets.out import export_snapshot
from pipeline.assets.partitions import (
    MODEL_PARTITIONS,
    MODELS,
    PARTITION_RETRY,
    PARTS_EXECUTOR,
    PARTS_GROUP,
    SOURCE_PARTITIONS,
    SOURCES,
)
from pipeline.assets.raw import _clock_sane, _metadata, raw_hub__models
from pipeline.compute.model_parts import catalog_digest, gpu_hashes, setup_rows, sizing_rows
from pipeline.compute.tracked import Tracked, tracked_models
from pipeline.ingest.prices import client_for, latest_rates
from pipeline.quality.offers import rebuild_offer_quality
from pipeline.resources import VramlabSettings, store
from pipeline.settings import variable
from pipeline.sources import CURRENCY_SOURCE
from pipeline.sources.base import Offer
from pipeline.sources.landing import HEALTHY, LOADABLE, FetchLogEntry, run_source
from pipeline.storage import cheapest_setups, offers_judged, snapshot_files, tables
from pipeline.storage import sizing as sizing_table
from pipeline.storage.loaders import (
    insert_frame,
    load_fetch_log,
    load_observations_detailed,
    mark_loaded,
    rebuild_current,
    source_fingerprints,
    transaction,
)
from pipeline.storage.parts import latest_part, latest_parts, parts_root, prune, write_part
from sizing_core.gpus import catalog

TAGS = {"vramlab/layer": "parts"}
OFFERS_PART = ("offers", "eligible")  # (kind, partition) of the eligible offers the model steps price on


# --- price sources --------------------------------------------------------------------------------------------

@dg.asset(name="parts__prices", group_name=PARTS_GROUP, partitions_def=SOURCE_PARTITIONS, kinds={"python", "parquet"},
          retry_policy=PARTITION_RETRY, tags=TAGS,
          description="One price source (the partition) fetched, landed and parsed; its fetch-log entry and offers "
                      "written as a Parquet part (data/parts/prices/SOURCE/). A failing source is recorded in its "
                      "part and metadata, as the raw layer records it; it never stops the other partitions.")
def parts__prices(context: dg.AssetExecutionContext, vramlab: VramlabSettings) -> dg.MaterializeResult:
    s = vramlab.settings
    _clock_sane(s)
    source = SOURCES[context.partition_key]
    # the newest landed ECB rates (the ecb partition lands them; the bundled recording before any)
    rates = None if source is CURRENCY_SOURCE else latest_rates(s.data_dir)
    with client_for(s.replay, vramlab.fail_sources, step=s.replay_step) as client:
        entry, result = run_source(source, client, s.data_dir, rates, replay=s.replay)
    loadable = entry.outcome in LOADABLE and entry.raw_path is not None  # what pending_fetches() would load
    offers = result.offers if loadable and result is not None else []
    frame = pl.DataFrame({"offer_key": [o.offer_key for o in offers], "observed_at": [o.observed_at for o in offers],
                          "gpu_id": [o.gpu_id for o in offers],
                          "price_per_hour_usd": [o.price_per_hour_usd for o in offers],
                          "offer": [o.model_dump_json() for o in offers]},
                         schema={"offer_key": pl.String, "observed_at": pl.Datetime("us", "UTC"), "gpu_id": pl.String,
                                 "price_per_hour_usd": pl.Float64, "offer": pl.String})
    part = write_part(parts_root(s.data_dir), "prices", source.name, context.run.run_id, frame,
                      {"entry": entry.model_dump(mode="json"), "loadable": loadable})
    if entry.outcome not in HEALTHY:
        context.log.warning(f"{source.name}: {entry.outcome}: {entry.message}")
    return dg.MaterializeResult(metadata={**_metadata(entry, s.replay), "part": dg.MetadataValue.path(str(part.path)),
                                          "dagster/row_count": frame.height})


@dg.asset(name="parts__offers", group_name=PARTS_GROUP, pool=POOL, kinds={"duckdb", "parquet"}, deps=[parts__prices],
          tags=TAGS,
          description="Consolidates the newest part of every price source into DuckDB (fetch_log, price_observations; "
                      "offers_current and offer_quality rebuilt, as the core assets do) and writes the eligible offers "
                      "as a part the model steps read (data/parts/offers/eligible/). The only DuckDB writer of the "
                      "price half; idempotent (loading a part twice adds nothing).")
def parts__offers(context: dg.AssetExecutionContext, vramlab: VramlabSettings,
                  duckdb: DuckDBResource) -> dg.MaterializeResult:
    s = vramlab.settings
    root = parts_root(s.data_dir)
    parts = latest_parts(root, "prices")
    missing = sorted(set(SOURCES) - set(parts))
    entries: list[FetchLogEntry] = []
    offers: list[tuple[Offer, str]] = []
    loaded: list[tuple[str, datetime, str]] = []
    for name in sorted(parts, key=lambda n: (parts[n].meta()["entry"]["started_at"], n)):
        meta = parts[name].meta()
        entry = FetchLogEntry.model_validate(meta["entry"])
        entries.append(entry)
        if meta["loadable"]:
            sha = entry.sha256 or ""
            offers += [(Offer.model_validate_json(text), sha) for text in parts[name].frame()["offer"]]
            loaded.append((entry.source, entry.started_at, entry.raw_path or ""))
    as_of = vramlab.as_of()
    with store(duckdb) as con:
        new = load_fetch_log(con, entries)
        added = load_observations_detailed(con, offers)
        mark_loaded(con, loaded, datetime.now(UTC))
        current = rebuild_current(con, as_of)
        quality = rebuild_offer_quality(con, datetime.now(UTC))
        # the rows eligible_offers() reads (pipeline/compute/offer_groups.py), as Arrow for the part
        eligible = offers_judged.eligible_arrow(con)
        fingerprints = source_fingerprints(con)
    if eligible.num_rows == 0:
        raise dg.Failure(description="no eligible offer after consolidating the price parts: nothing to price "
                                     "setups on (see core__offer_quality's checks)", allow_retries=False)
    part = write_part(root, *OFFERS_PART, context.run.run_id, eligible, {"as_of": as_of.isoformat()})
    pruned = prune(root, "prices") + prune(root, OFFERS_PART[0])
    provenance = {"code_version": code_version(), "as_of": as_of.isoformat(), "mode": "live" if vramlab.live else
                  "replay", "source_sha256": fingerprints}
    return dg.MaterializeResult(metadata={
        "dagster/row_count": current["offers"], "parts_loaded": len(parts), "new_attempts": len(new),
        "new_observations": added["added"], "quarantined": added["quarantined"],
        "eligible_offers": quality["eligible"], "sources_without_part": dg.MetadataValue.json(missing),
        "offers_part": dg.MetadataValue.path(str(part.path)), "parts_pruned": pruned,
        "provenance": dg.MetadataValue.json(provenance),
        "parts": table([("source", "string"), ("outcome", "string"), ("offers", "int"), ("written", "string")],
                       [(n, p.meta()["entry"]["outcome"], p.meta()["entry"]["offers"],
                         datetime.fromtimestamp(p.written_ns / 1e9, UTC)) for n, p in sorted(parts.items())])})


# --- models ---------------------------------------------------------------------------------------------------

@dg.asset(name="parts__models", group_name=PARTS_GROUP, kinds={"python"}, deps=[raw_hub__models, core__models],
          tags=TAGS,
          description="Discovery of the model partitions: every tracked model (watchlist and, with "
                      "VRAMLAB_DISCOVERY=1, discovered) that can be sized is registered as a dynamic partition of "
                      "'models'; the others are listed with the reason.")
def parts__models(context: dg.AssetExecutionContext, vramlab: VramlabSettings) -> dg.MaterializeResult:
    tracked = tracked_models(vramlab.settings.data_dir)
    sizable = [t.entry.id for t in tracked if t.arch is not None]
    known = set(context.instance.get_dynamic_partitions(MODELS))
    added = [m for m in sizable if m not in known]
    if added:
        context.instance.add_dynamic_partitions(MODELS, added)
    untracked = sorted(known - set(sizable))  # kept (their history stays); publishing ignores them
    context.log.info(f"model partitions: {len(added)} added, {len(sizable) - len(added)} already registered")
    return dg.MaterializeResult(metadata={
        "models": len(sizable), "partitions_added": dg.MetadataValue.json(added),
        "registered_not_tracked": dg.MetadataValue.json(untracked),
        "not_sizable": table([("model", "string"), ("reason", "string")],
                             [(t.entry.id, (t.error or "")[:200]) for t in tracked if t.arch is None])})


def _tracked(context: dg.AssetExecutionContext, vramlab: VramlabSettings) -> Tracked:
    model = context.partition_key
    found = {t.entry.id: t for t in tracked_models(vramlab.settings.data_dir)}
    t = found.get(model)
    if t is None or t.arch is None:
        why = "is not tracked (any more)" if t is None else f"cannot be sized: {t.error}"
        raise dg.Failure(description=f"model partition {model} {why}", allow_retries=False)
    return t


@dg.asset(name="parts__sizing", group_name=PARTS_GROUP, partitions_def=MODEL_PARTITIONS, kinds={"polars", "parquet"},
          deps=[parts__models, core__gpus], retry_policy=PARTITION_RETRY, tags=TAGS,
          description="One model's sizing grid (every format x context x catalog GPU x engine) as a Parquet part "
                      "(data/parts/sizing/MODEL/), keyed by the model's revision and the GPU catalog.")
def parts__sizing(context: dg.AssetExecutionContext, vramlab: VramlabSettings) -> dg.MaterializeResult:
    t = _tracked(context, vramlab)
    gpus = catalog()
    started = time.perf_counter()
    frame = sizing_rows(t, gpus)
    meta = {"revision": t.revision, "sizing_version": frame["sizing_version"][0] if frame.height else None,
            "catalog": catalog_digest(gpu_hashes(gpus))}
    part = write_part(parts_root(vramlab.settings.data_dir), "sizing", t.entry.id, context.run.run_id, frame, meta)
    return dg.MaterializeResult(metadata={"dagster/row_count": frame.height, "revision": t.revision or "",
                                          "seconds": round(time.perf_counter() - started, 3),
                                          "part": dg.MetadataValue.path(str(part.path))})


def read_offers(path: str) -> list[dict[str, Any]]:
    """The eligible offers of a part as ``eligible_offers`` returns them from DuckDB (read back by DuckDB)."""
    return snapshot_files.offer_rows(path)


@dg.asset(name="parts__setups", group_name=PARTS_GROUP, partitions_def=MODEL_PARTITIONS, kinds={"python", "parquet"},
          deps=[parts__models, parts__offers], retry_policy=PARTITION_RETRY, tags=TAGS,
          description="One model's cheapest setups (every standard load, as out__cheapest_setups) priced on the "
                      "eligible offers parts__offers consolidated, as a Parquet part (data/parts/setups/MODEL/).")
def parts__setups(context: dg.AssetExecutionContext, vramlab: VramlabSettings) -> dg.MaterializeResult:
    t = _tracked(context, vramlab)
    root = parts_root(vramlab.settings.data_dir)
    offers_part = latest_part(root, *OFFERS_PART)
    if offers_part is None:
        raise dg.Failure(description="no consolidated offers yet: materialize parts__offers first",
                         allow_retries=False)
    started = time.perf_counter()
    rows = setup_rows(t, read_offers(str(offers_part.path)), as_of=vramlab.as_of(), now=datetime.now(UTC))
    frame = pl.DataFrame(rows, infer_schema_length=None)
    part = write_part(root, "setups", t.entry.id, context.run.run_id, frame,
                      {"revision": t.revision, "offers_part": offers_part.path.name})
    return dg.MaterializeResult(metadata={"dagster/row_count": frame.height, "revision": t.revision or "",
                                          "offers_part": offers_part.path.name,
                                          "seconds": round(time.perf_counter() - started, 3),
                                          "part": dg.MetadataValue.path(str(part.path))})


def stale_parts(tracked: list[Tracked], sizing: dict, setups: dict, offers_name: str | None,
                current: dict[str, str]) -> dict[str, str]:
    """Model -> why its parts cannot be published (missing, another revision, other sizing code or GPU catalog,
    setups priced on older offers); empty when every tracked model's parts are current."""
    out = {}
    for t in tracked:
        m = t.entry.id
        a, b = sizing.get(m), setups.get(m)
        if a is None or b is None:
            out[m] = "no " + " and no ".join(k for k, p in (("sizing part", a), ("setups part", b)) if p is None)
            continue
        ma, mb = a.meta(), b.meta()
        if ma["revision"] != t.revision or mb["revision"] != t.revision:
            out[m] = f"parts of revision {ma['revision']}/{mb['revision']}, tracked {t.revision}"
        elif ma["catalog"] != current["catalog"] or (ma["sizing_version"] or current["sizing_version"]) != \
                current["sizing_version"]:
            out[m] = "sized with another GPU catalog or sizing code"
        elif mb["offers_part"] != offers_name:
            out[m] = f"setups priced on offers {mb['offers_part']}, current {offers_name}"
    return out


@dg.asset(name="parts__publish", group_name=PARTS_GROUP, pool=POOL, kinds={"duckdb", "json", "parquet"},
          deps=[parts__sizing, parts__setups], tags=TAGS,
          description="Consolidation 2 and publishing: every tracked model's newest sizing and setups parts into "
                      "DuckDB (sizing, cheapest_setups; one transaction), then the snapshot as out__exports "
                      "publishes it. Refuses, naming the models, when a part is missing or stale.")
def parts__publish(context: dg.AssetExecutionContext, vramlab: VramlabSettings,
                   duckdb: DuckDBResource) -> dg.MaterializeResult:
    from pipeline.compute.grid import grid_version

    s = vramlab.settings
    root = parts_root(s.data_dir)
    tracked = [t for t in tracked_models(s.data_dir) if t.arch is not None]
    sizing, setups = latest_parts(root, "sizing"), latest_parts(root, "setups")
    offers = latest_part(root, *OFFERS_PART)
    current = {"catalog": catalog_digest(gpu_hashes(catalog())), "sizing_version": grid_version()}
    stale = stale_parts(tracked, sizing, setups, offers.path.name if offers else None, current)
    if stale:
        raise dg.Failure(description=f"{len(stale)} model partitions not ready ("
                                     + "; ".join(f"{m}: {why}" for m, why in sorted(stale.items())[:10])
                                     + "): backfill them (vramlab parts run --models ..., or parts_models_job)",
                         metadata={"stale": dg.MetadataValue.json(stale)}, allow_retries=False)
    sizing_files = [str(sizing[t.entry.id].path) for t in tracked]
    frames = [setups[t.entry.id].frame() for t in tracked]
    rows = pl.concat([f for f in frames if f.height], how="diagonal_relaxed") if any(f.height for f in frames) \
        else None
    with store(duckdb) as con:
        with transaction(con):
            sizing_table.replace_from_parquet(con, sizing_files)
            cheapest_setups.clear(con)
            if rows is not None:
                insert_frame(con, "cheapest_setups", rows, by_name=True)
        counts = (tables.row_count(con, "sizing"), tables.row_count(con, "cheapest_setups"))
    result = export_snapshot(context, vramlab, duckdb, offers_asset="parts__offers")
    pruned = prune(root, "sizing") + prune(root, "setups")
    return dg.MaterializeResult(metadata={**(result.metadata or {}), "sizing_rows": counts[0],
                                          "setup_rows": counts[1], "models_published": len(tracked),
                                          "parts_pruned": pruned})


PARTITIONED_ASSETS = [parts__prices, parts__offers, parts__models, parts__sizing, parts__setups, parts__publish]

#: the partitioned graph's jobs, in the order they run (one partitions definition per job)
parts_prepare_job = dg.define_asset_job(
    "parts_prepare_job", selection=["raw_hub__models", "core__gpus", "core__models", "parts__models"],
    description="Hub models, GPU catalog and model table; registers the model partitions (discovery).")
parts_prices_job = dg.define_asset_job(
    "parts_prices_job", selection=["parts__prices"], executor_def=PARTS_EXECUTOR,
    description="One price source per run: backfill it over the source partitions.")
parts_offers_job = dg.define_asset_job(
    "parts_offers_job", selection=["parts__offers"],
    description="Consolidates the price parts into DuckDB; writes the eligible-offers part.")
parts_models_job = dg.define_asset_job(
    "parts_models_job", selection=["parts__sizing", "parts__setups"], executor_def=PARTS_EXECUTOR, description="One model's sizing and setups per run: backfill it over the models.")
parts_publish_job = dg.define_asset_job(
    "parts_publish_job", selection=["parts__publish"],
    description="Consolidates the model parts into DuckDB and publishes the snapshot.")
PARTITIONED_JOBS = [parts_prepare_job, parts_prices_job, parts_offers_job, parts_models_job, parts_publish_job]


def celery_partition_jobs() -> list:
    """The two partitioned jobs with their steps sent to ``dagster-celery`` workers, when a broker is configured
    (``VRAMLAB_CELERY_BROKER``, as ``celery_refresh_job``; no Celery import otherwise): ``vramlab parts run
    --celery`` runs them."""

    broker = variable("VRAMLAB_CELERY_BROKER").text()
    if not broker:
        return []
    from pipeline.executors import celery_executor

    executor = celery_executor(broker, name="parts_celery")
    return [dg.define_asset_job("parts_prices_celery_job", selection=["parts__prices"], executor_def=executor,
                                description="parts_prices_job with its step on a Celery worker."),
            dg.define_asset_job("parts_models_celery_job", selection=["parts__sizing", "parts__setups"],
                                executor_def=executor, description="parts_models_job with its steps on Celery workers.")]
