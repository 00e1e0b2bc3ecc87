"""Out layer: the sizing grid, the cheapest setups, and the published snapshot consumers read."""

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import dagster as dg
import duckdb
import polars as pl
from dagster_duckdb import DuckDBResource

from pipeline.assets.core import POOL, code_version, core__gpus, core__models
from pipeline.assets.metadata import column_schema, parquet_schema, table
from pipeline.assets.quality import core__offer_quality
from pipeline.compute.answers import (
    FIDELITY,
    PUBLISHED,
    overall,
    setup_from_row,
    setup_row,
    standard_loads,
)
from pipeline.compute.grid import compute_grid, grid_version
from pipeline.compute.placement_cache import PlacementCache
from pipeline.compute.setups import (
    ON_DEMAND,
    SPOT_LIKE,
    OfferGroups,
    Planner,
    cheapest_setups,
    eligible_offers,
)
from pipeline.compute.tracked import tracked_models
from pipeline.exports.build import publish
from pipeline.exports.snapshot_offers import keep_offers
from pipeline.resources import VramlabSettings, store
from pipeline.storage.loaders import insert_frame, transaction
from sizing_core.formats import WEIGHT_FORMATS
from sizing_core.gpus import catalog

OUT_GROUP = "out"
SETUP_FORMATS = ("native", *(f for f in WEIGHT_FORMATS if f != "fp16"))
TOP = 5
#: models per grid chunk in out__sizing (about 13k rows per model on the whole catalog)
GRID_CHUNK_MODELS = 25


def _with_hashes(frame: pl.DataFrame, hashes: dict[str, str]) -> pl.DataFrame:
    """The grid's rows with what decides whether they are reused: the GPU row's hash and the sizing code."""
    return frame.with_columns(gpu_row_hash=pl.col("gpu_id").replace_strict(hashes, default="?"),
                              sizing_version=pl.lit(grid_version()))


@contextmanager
def deferred_checkpoints(con: Any) -> Iterator[None]:
    """Raise DuckDB's WAL checkpoint threshold while the grid is written chunk by chunk (each commit would
    otherwise checkpoint the growing table again), then checkpoint once."""
    before = con.execute("SELECT current_setting('checkpoint_threshold')").fetchall()[0][0]
    con.execute("SET checkpoint_threshold = '4GB'")
    try:
        yield
    finally:
        con.execute(f"SET checkpoint_threshold = '{before}'")
        try:
            con.execute("CHECKPOINT")
        except duckdb.Error:  # another transaction is open: DuckDB checkpoints at its threshold or on close
            pass


@dg.asset(name="out__sizing", group_name=OUT_GROUP, pool=POOL, kinds={"duckdb", "polars"},
          deps=[core__models, core__gpus], tags={"vramlab/layer": "out"},
          description="Sizing grid: model x format x context x GPU x engine (memory, fit, GPU count, decode "
                      "speed), recomputed only for changed model revisions and changed GPU catalog rows.")
def out__sizing(context: dg.AssetExecutionContext, vramlab: VramlabSettings,
                duckdb: DuckDBResource) -> dg.MaterializeResult:
    tracked = [t for t in tracked_models(vramlab.settings.data_dir) if t.arch is not None]
    gpus = catalog()
    with store(duckdb) as con:
        hashes = dict(con.execute("SELECT id, row_hash FROM gpus").fetchall())
        # a model counts as done only when all its rows come from this sizing code (sql/013)
        done_models = dict(con.execute("SELECT model_id, any_value(revision) FROM sizing GROUP BY model_id "
                                       "HAVING bool_and(sizing_version = ?) AND count(DISTINCT revision) = 1",
                                       [grid_version()]).fetchall())
        done_gpus = dict(con.execute("SELECT DISTINCT gpu_id, gpu_row_hash FROM sizing").fetchall())
        changed_models = {t.entry.id for t in tracked if done_models.get(t.entry.id) != t.revision}
        changed_gpus = {g for g in gpus if done_gpus.get(g) != hashes.get(g)}
        unchanged = {t.entry.id: (t.revision, t.arch) for t in tracked if t.entry.id not in changed_models}
        changed = [(t.entry.id, (t.revision, t.arch)) for t in tracked if t.entry.id in changed_models]
        # Computed in chunks of models, each chunk written in its own transaction (a model's rows are replaced
        # whole or not at all; a run stopped midway leaves the rest for the next run, which sees their old
        # revision), so neither the 2 M-row grid of 200 models nor DuckDB's uncommitted rows sit in memory whole
        # (perf #14). Rows of a changed GPU row for unchanged models are replaced in one transaction.
        computed = 0
        gone = set(done_models) - {t.entry.id for t in tracked} or set(done_gpus) - set(gpus)
        if changed or changed_gpus or gone:
            with deferred_checkpoints(con):
                with transaction(con):
                    con.execute("DELETE FROM sizing WHERE model_id NOT IN (SELECT UNNEST(?::VARCHAR[]))",
                                [[t.entry.id for t in tracked]])
                    con.execute("DELETE FROM sizing WHERE gpu_id NOT IN (SELECT UNNEST(?::VARCHAR[]))", [list(gpus)])
                for i in range(0, len(changed), GRID_CHUNK_MODELS):
                    chunk = dict(changed[i:i + GRID_CHUNK_MODELS])
                    frame = _with_hashes(compute_grid(chunk, list(gpus.values())), hashes)
                    with transaction(con):
                        con.execute("DELETE FROM sizing WHERE model_id IN (SELECT UNNEST(?::VARCHAR[]))", [list(chunk)])
                        insert_frame(con, "sizing", frame)
                    computed += frame.height
                    del frame
                if changed_gpus and unchanged:
                    items = list(unchanged.items())
                    with transaction(con):
                        con.execute("DELETE FROM sizing WHERE gpu_id IN (SELECT UNNEST(?::VARCHAR[])) AND model_id IN "
                                    "(SELECT UNNEST(?::VARCHAR[]))", [sorted(changed_gpus), list(unchanged)])
                        for i in range(0, len(items), GRID_CHUNK_MODELS):
                            frame = _with_hashes(compute_grid(dict(items[i:i + GRID_CHUNK_MODELS]),
                                                              [gpus[g] for g in sorted(changed_gpus)]), hashes)
                            insert_frame(con, "sizing", frame)
                            computed += frame.height
                            del frame
        total = con.execute("SELECT count(*) FROM sizing").fetchall()[0][0]
        schema = column_schema(con, "sizing")
    reused_models = sorted(t.entry.id for t in tracked if t.entry.id not in changed_models)
    context.log.info(f"sizing grid: {computed} rows computed, {total - computed} reused "
                     f"({len(reused_models)} models with unchanged revisions, {len(gpus) - len(changed_gpus)} "
                     "unchanged GPU rows)")
    return dg.MaterializeResult(metadata={
        "dagster/row_count": total, "rows_computed": computed, "rows_reused": total - computed,
        "models_recomputed": len(changed_models), "gpus_recomputed": len(changed_gpus),
        "models_skipped": len(reused_models), "gpus_skipped": len(gpus) - len(changed_gpus),
        "skipped": dg.MetadataValue.md(
            "Kept from earlier runs (Hub revision and GPU catalog row unchanged): "
            + (", ".join(reused_models) if reused_models else "nothing") + "."
            + (f" Re-sized models: {', '.join(sorted(changed_models))}." if changed_models else "")
            + (f" Re-sized GPUs: {', '.join(sorted(changed_gpus))}." if changed_gpus else "")), **schema})


@dg.asset(name="out__cheapest_setups", group_name=OUT_GROUP, pool=POOL, kinds={"duckdb"},
          deps=[core__offer_quality, core__models], tags={"vramlab/layer": "out"},
          description="Per model and format, the cheapest on-demand deployments (one request of 8K tokens, BF16 "
                      "KV cache) from current non-stale offers the quality stage keeps (no duplicate, quarantined, "
                      "marketplace or monthly offer), priced on whole instances; spot/marketplace apart.")
def out__cheapest_setups(vramlab: VramlabSettings, duckdb: DuckDBResource) -> dg.MaterializeResult:
    tracked = [t for t in tracked_models(vramlab.settings.data_dir) if t.arch is not None]
    now = datetime.now(UTC)
    as_of = vramlab.as_of()
    rows = []
    with store(duckdb) as con:
        offers = eligible_offers(con)
        on_demand, spot = OfferGroups(offers, ON_DEMAND), OfferGroups(offers, SPOT_LIKE)  # once for every model
        # placements, floors and decode rates of unchanged models on unchanged GPU rows, from earlier runs (#14)
        cache = PlacementCache.load(con, {t.entry.id: t.revision for t in tracked}, catalog())
        reused = len(cache.rows)
        for t in tracked:
            model = (t.entry.id, t.revision)
            for load in standard_loads(t.arch.max_context):
                planners = {f: Planner(t.arch, f, load.context, load.concurrency, "bf16", cache=cache, model=model)
                            for f in SETUP_FORMATS}
                questions: list[tuple[str, Any, str, Any]] = [("on_demand", on_demand, "per_token", FIDELITY)]
                if load == PUBLISHED:  # the published question: a list per format, on-demand and spot
                    questions += [(name, grouped, "price", fmt) for fmt in SETUP_FORMATS
                                  for name, grouped in (("on_demand", on_demand), ("spot", spot))]
                else:  # every other load: the overall answer (most faithful format per configuration)
                    questions.append(("on_demand", on_demand, "price", FIDELITY))
                for list_name, grouped, sort, formats in questions:
                    found = cheapest_setups(t.arch, formats, grouped, context=load.context,
                                            concurrency=load.concurrency, top=TOP, allocations=grouped.allocations,
                                            planner={f: planners[f] for f in planners if f in (
                                                (formats,) if isinstance(formats, str) else formats)},
                                            as_of=as_of, sort=sort)
                    rows += [{"model_id": t.entry.id, "list": list_name, "rank": rank + 1, "computed_at": now,
                              "sort": sort, **setup_row(s)} for rank, s in enumerate(found)]
        with transaction(con):
            con.execute("DELETE FROM cheapest_setups")
            if rows:
                insert_frame(con, "cheapest_setups", pl.DataFrame(rows, infer_schema_length=None), by_name=True)
            cached = cache.save(con)
        schema = column_schema(con, "cheapest_setups")
    return dg.MaterializeResult(metadata={
        "dagster/row_count": len(rows), "models": len(tracked), "top_setups": top_setups_table(rows),
        "placements_reused": cache.hits["placement"], "placements_computed": cache.misses["placement"],
        "floors_computed": cache.misses["floor"], "rates_computed": cache.misses["rates"],
        "models_replanned": len(cache.computed_models), "gpus_replanned": len(cache.computed_gpus),
        "placement_cache": dg.MetadataValue.md(
            "Answered from the cross-run cache / computed: "
            + ", ".join(f"{kind}s {cache.hits[kind]:,} / {cache.misses[kind]:,}" for kind in cache.hits)
            + f" ({reused:,} valid rows loaded); " + (f"{cached:,} rows written." if cached else "table unchanged.")
            + (f" Re-planned models: {', '.join(sorted(cache.computed_models))}." if cache.computed_models else "")
            + (f" Re-planned GPUs: {', '.join(sorted(cache.computed_gpus))}." if cache.computed_gpus else "")),
        **schema})


def published_answers(rows: list[dict], tracked: list) -> dict[str, tuple[list, list, list[dict]]]:
    """Per model: the overall on-demand and spot lists of the published question (8K x 1, by price) and, per
    standard load, the overall lists by price and by cost per token (``cheapestSetupsByLoad``)."""
    lists: dict[tuple, list] = {}
    for row in rows:
        key = (row["model_id"], row["list"], row.get("context") or 8192, row.get("concurrency") or 1,
               row.get("sort") or "price")
        lists.setdefault(key, []).append(setup_from_row(row))
    out: dict[str, tuple[list, list, list[dict]]] = {}
    for t in tracked:
        if t.arch is None:
            continue
        m = t.entry.id
        first = (PUBLISHED.context, PUBLISHED.concurrency)
        by_load = [{"context": load.context, "concurrency": load.concurrency, "label": load.label,
                    "byPrice": overall(lists.get((m, "on_demand", load.context, load.concurrency, "price"), [])),
                    "byCostPerToken": overall(lists.get((m, "on_demand", load.context, load.concurrency,
                                                         "per_token"), []), sort="per_token")}
                   for load in standard_loads(t.arch.max_context)]
        out[m] = (overall(lists.get((m, "on_demand", *first, "price"), [])),
                  overall(lists.get((m, "spot", *first, "price"), [])), by_load)
    return out


def top_setups_table(rows: list[dict]) -> dg.TableMetadataValue:
    """Each model's cheapest on-demand setup per format family (the UI's table of answers), as the CLI prints it."""
    best: dict[str, dict] = {}
    for r in rows:
        if r["list"] != "on_demand" or r.get("sort", "price") != "price" or (r["context"], r["concurrency"]) != (
                PUBLISHED.context, PUBLISHED.concurrency):
            continue
        if r["model_id"] not in best or r["price_per_hour"] < best[r["model_id"]]["price_per_hour"]:
            best[r["model_id"]] = r
    return table([("model", "string"), ("setup", "string"), ("plan", "string"), ("engine", "string"),
                  ("format", "string"), ("provider", "string"), ("region", "string"), ("usd_per_hour", "float"),
                  ("usd_per_million_tokens", "float")],
                 [(m, f"{r['instances']}x{r['gpus_per_instance']} {r['gpu_id']}",
                   f"TP {r['tensor_parallel']} x PP {r['pipeline_parallel']}", r["engine"], r["format"], r["provider"],
                   r["region"], r["price_per_hour"], r.get("usd_per_million_tokens")) for m, r in sorted(best.items())])


@dg.asset(name="out__exports", group_name=OUT_GROUP, pool=POOL, kinds={"json", "parquet"},
          deps=[out__sizing, out__cheapest_setups], tags={"vramlab/layer": "out"},
          description="Publishes a snapshot folder data/exports/SNAPSHOT_ID/ (per-model JSON compatible with seed 004, "
                      "Parquet tables, JSON Schemas, manifest with sha256 and per-source verification) and switches "
                      "data/exports/latest to it.")
def out__exports(context: dg.AssetExecutionContext, vramlab: VramlabSettings,
                 duckdb: DuckDBResource) -> dg.MaterializeResult:
    return export_snapshot(context, vramlab, duckdb)


def export_snapshot(context: dg.AssetExecutionContext, vramlab: VramlabSettings, duckdb: DuckDBResource,
                    offers_asset: str = "core__offers_current") -> dg.MaterializeResult:
    """Publish a snapshot of what DuckDB holds (``out__exports``; the partitioned graph's publishing step calls it
    after consolidating, with its own offers asset as the provenance's origin)."""
    s = vramlab.settings
    tracked = tracked_models(s.data_dir)
    offers_md = context.instance.get_latest_materialization_event(dg.AssetKey(offers_asset))
    provenance = {"code_version": code_version()}
    if offers_md is not None and offers_md.asset_materialization is not None:
        provenance |= dict(offers_md.asset_materialization.metadata["provenance"].value)
    with store(duckdb) as con:
        cols = [d[0] for d in con.execute("SELECT * FROM cheapest_setups LIMIT 0").description]
        rows = con.execute("SELECT * FROM cheapest_setups ORDER BY model_id, list, context, concurrency, sort, "
                           "format, rank").fetchall()
        setups = published_answers([dict(zip(cols, r, strict=True)) for r in rows], tracked)
        stats: dict = {}
        path = publish(con, s.data_dir / "exports", tracked, setups, as_of=vramlab.as_of(),
                       mode="live" if vramlab.live else "replay", now=datetime.now(UTC), provenance=provenance,
                       stats=stats, reuse=True)
    keep_offers(path)  # the CLI's offers cache (pipeline/exports/snapshot_offers.py): the first `fit`/`gpus` needs no pyarrow
    sized = sum(1 for t in tracked if t.arch is not None)
    return dg.MaterializeResult(metadata={"snapshot": dg.MetadataValue.path(str(path)),
                                          "model_files_reused": len(stats["models_reused"]),
                                          "model_files_sized": len(stats["models_sized"]),
                                          "model_files_cache": dg.MetadataValue.md(
                                              "Price-independent parts (sizing report, gpusNeeded, throughput, "
                                              "fine-tuning) re-used from an earlier run: "
                                              f"{len(stats['models_reused'])} models. Sized in this run: "
                                              + (", ".join(stats["models_sized"]) or "none") + "."),
                                          "latest": dg.MetadataValue.path(str(s.data_dir / "exports" / "latest")),
                                          "report": dg.MetadataValue.path(str(path / "report" / "index.html")),
                                          "models": len(tracked), "models_sized": sized,
                                          "dagster/column_schema": parquet_schema(str(path / "cheapest_setups.parquet")),
                                          "files": table([("file", "string"), ("bytes", "int")],
                                                         sorted((str(f.relative_to(path)), f.stat().st_size)
                                                                for f in path.rglob("*") if f.is_file()
                                                                and f.suffix in (".parquet", ".json")
                                                                and f.parent.name != "models"))})


OUT_ASSETS = [out__sizing, out__cheapest_setups, out__exports]
