"""Out layer: the sizing grid, the cheapest setups, and the published snapshot consumers read."""

from datetime import UTC, datetime

import dagster as dg
import polars as pl
from dagster_duckdb import DuckDBResource

from pipeline.assets.core import POOL, code_version, core__gpus, core__models
from pipeline.assets.metadata import column_schema, parquet_schema, table
from pipeline.assets.quality import core__offer_quality
from pipeline.compute.answers import PUBLISHED
from pipeline.compute.gc_passes import fewer_gc_passes
from pipeline.compute.grid import compute_grid, grid_version
from pipeline.compute.setups_table import StoredSetups, loads_of, refresh_cheapest_setups
from pipeline.compute.tracked import tracked_models
from pipeline.data_dir import DataDir
from pipeline.exports.build import publish
from pipeline.exports.snapshot_offers import keep_offers
from pipeline.resources import VramlabSettings, store
from pipeline.settings import ForeignLink, check_data_dir
from pipeline.storage import sizing, tables
from pipeline.storage.db import deferred_checkpoints
from pipeline.storage.loaders import insert_frame, transaction
from sizing_core.gpus import catalog

OUT_GROUP = "out"
#: models per grid chunk in out__sizing (about 13k rows per model on the whole catalog)
GRID_CHUNK_MODELS = 25


def _with_hashes(frame: pl.DataFrame, hashes: dict[str, str]) -> pl.DataFrame:
    """The grid's rows with what decides whether they are reused: the GPU row's hash and the sizing code."""
    return frame.with_columns(gpu_row_hash=pl.col("gpu_id").replace_strict(hashes, default="?"),
                              sizing_version=pl.lit(grid_version()))


@dg.asset(name="out__sizing", group_name=OUT_GROUP, pool=POOL, kinds={"duckdb", "polars"},
          deps=[core__models, core__gpus], tags={"vramlab/layer": "out"},
          description="Sizing grid: model x format x context x GPU x engine (memory, fit, GPU count, decode "
                      "speed), recomputed only for changed model revisions and changed GPU catalog rows.")
def out__sizing(context: dg.AssetExecutionContext, vramlab: VramlabSettings,
                duckdb: DuckDBResource) -> dg.MaterializeResult:
    tracked = [t for t in tracked_models(vramlab.settings.data_dir) if t.arch is not None]
    gpus = catalog()
    with fewer_gc_passes(), store(duckdb) as con:
        hashes = tables.gpu_row_hashes(con)
        # a model counts as done only when all its rows come from this sizing code (sql/013)
        done_models = sizing.models_done(con, grid_version())
        done_gpus = sizing.gpu_hashes_done(con)
        stored = sizing.stored_models(con)
        changed_models = {t.entry.id for t in tracked if done_models.get(t.entry.id) != t.revision}
        changed_gpus = {g for g in gpus if done_gpus.get(g) != hashes.get(g)}
        unchanged = {t.entry.id: (t.revision, t.arch) for t in tracked if t.entry.id not in changed_models}
        changed = [(t.entry.id, (t.revision, t.arch)) for t in tracked if t.entry.id in changed_models]
        # Computed in chunks of models, each chunk written in its own transaction (a model's rows are replaced
        # whole or not at all; a run stopped midway leaves the rest for the next run, which sees their old
        # revision), so neither the 2 M-row grid of 200 models nor DuckDB's uncommitted rows sit in memory
        # whole. Rows of a changed GPU row for unchanged models are replaced in one transaction.
        computed = 0
        gone = set(done_models) - {t.entry.id for t in tracked} or set(done_gpus) - set(gpus)
        if changed or changed_gpus or gone:
            with deferred_checkpoints(con):
                with transaction(con):
                    sizing.keep_only(con, [t.entry.id for t in tracked], list(gpus))
                for i in range(0, len(changed), GRID_CHUNK_MODELS):
                    chunk = dict(changed[i:i + GRID_CHUNK_MODELS])
                    frame = _with_hashes(compute_grid(chunk, list(gpus.values())), hashes)
                    with transaction(con):
                        old = [m for m in chunk if m in stored]  # (a DELETE scans the whole table: only when
                        if old:  # the chunk has rows to replace; per chunk on a fresh table it is quadratic)
                            sizing.delete_models(con, old)
                        insert_frame(con, "sizing", frame)
                    computed += frame.height
                    del frame
                if changed_gpus and unchanged:
                    items = list(unchanged.items())
                    with transaction(con):
                        sizing.delete_cells(con, sorted(changed_gpus), list(unchanged))
                        for i in range(0, len(items), GRID_CHUNK_MODELS):
                            frame = _with_hashes(compute_grid(dict(items[i:i + GRID_CHUNK_MODELS]),
                                                              [gpus[g] for g in sorted(changed_gpus)]), hashes)
                            insert_frame(con, "sizing", frame)
                            computed += frame.height
                            del frame
        total = tables.row_count(con, "sizing")
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
    with fewer_gc_passes(), store(duckdb) as con:
        run = refresh_cheapest_setups(con, tracked, as_of=vramlab.as_of(), now=datetime.now(UTC),
                                      workers=vramlab.settings.workers)
        schema = column_schema(con, "cheapest_setups")
    return dg.MaterializeResult(metadata={
        "dagster/row_count": run.rows, "models": len(tracked), "top_setups": top_setups_table(list(run.best.values())),
        "placements_reused": run.hits["placement"], "placements_computed": run.misses["placement"],
        "floors_computed": run.misses["floor"], "rates_computed": run.misses["rates"],
        "models_replanned": len(run.computed_models), "gpus_replanned": len(run.computed_gpus),
        "models_without_setups": len(run.skipped),
        "inputs_unchanged": run.kept_since is not None,
        **({"kept": dg.MetadataValue.md(
            f"Offers, models, GPU catalog, code and as-of date are those of the run at "
            f"{run.kept_since.astimezone(UTC):%Y-%m-%d %H:%M} "
            "UTC: its table is kept (recorded in `step_inputs`), nothing planned or served.")}
           if run.kept_since is not None else {}),
        "servings_reused": run.serving_hits["serving"], "servings_computed": run.serving_misses["serving"],
        "serving_cache": dg.MetadataValue.md(
            "Layouts at a standard load answered from the cross-run cache / computed: steady states "
            f"{run.serving_hits['serving']:,} / {run.serving_misses['serving']:,}, lower-bound screens "
            f"{run.serving_hits['bound']:,} / {run.serving_misses['bound']:,} ({run.serving_loaded:,} valid rows read, "
            f"{run.serving_pruned:,} no longer valid dropped); "
            + (f"{run.serving_written:,} rows written." if run.serving_written else "table unchanged.")),
        "placement_cache": dg.MetadataValue.md(
            "Answered from the cross-run cache / computed: "
            + ", ".join(f"{kind}s {run.hits[kind]:,} / {run.misses[kind]:,}" for kind in run.hits)
            + f" ({run.loaded:,} valid rows read, {run.pruned:,} no longer valid dropped); "
            + (f"{run.written:,} rows written." if run.written else "table unchanged.")
            + (f" Re-planned models: {', '.join(sorted(run.computed_models))}." if run.computed_models else "")
            + (f" Re-planned GPUs: {', '.join(sorted(run.computed_gpus))}." if run.computed_gpus else "")
            + ("".join(f" No setups for {m}: {why}." for m, why in sorted(run.skipped.items())))),
        **schema})


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
    try:
        check_data_dir(s.data_dir)  # exports/ and exports/history are written here: never through a foreign link
    except ForeignLink as exc:
        raise dg.Failure(description=str(exc), allow_retries=False) from None
    tracked = tracked_models(s.data_dir)
    offers_md = context.instance.get_latest_materialization_event(dg.AssetKey(offers_asset))
    provenance = {"code_version": code_version()}
    if offers_md is not None and offers_md.asset_materialization is not None:
        provenance |= dict(offers_md.asset_materialization.metadata["provenance"].value)
    with fewer_gc_passes(), store(duckdb) as con:
        setups = StoredSetups(con, loads_of(tracked))  # read a chunk of models at a time, not all at once
        stats: dict = {}
        path = publish(con, DataDir(s.data_dir).exports, tracked, setups, as_of=vramlab.as_of(),
                       mode="live" if vramlab.live else "replay", now=datetime.now(UTC), provenance=provenance,
                       stats=stats, reuse=True, workers=vramlab.settings.workers)
    keep_offers(path)  # the CLI's offers cache (pipeline/exports/snapshot_offers.py): the first `fit`/`gpus` needs no pyarrow
    sized = sum(1 for t in tracked if t.arch is not None)
    for table_name, reasons in stats["left_out"].items():
        context.log.warning(f"{table_name}: rows left out of the report ({reasons}); published as stored")
    for name, why in stats["prune_skipped"].items():
        context.log.warning(f"exports/{name} not pruned: {why}")
    return dg.MaterializeResult(metadata={"snapshot": dg.MetadataValue.path(str(path)),
                                          "rows_left_out": dg.MetadataValue.json(stats["left_out"]),
                                          "prune_skipped": dg.MetadataValue.json(stats["prune_skipped"]),
                                          "model_files_reused": len(stats["models_reused"]),
                                          "model_files_sized": len(stats["models_sized"]),
                                          "servings_reused": stats["servings_reused"],
                                          "servings_computed": stats["servings_computed"],
                                          "model_files_cache": dg.MetadataValue.md(
                                              "Price-independent parts (sizing report, gpusNeeded, throughput, "
                                              "fine-tuning) re-used from an earlier run: "
                                              f"{len(stats['models_reused'])} models. Sized in this run: "
                                              + (", ".join(stats["models_sized"]) or "none") + "."),
                                          "latest": dg.MetadataValue.path(str(DataDir(s.data_dir).latest)),
                                          "report": dg.MetadataValue.path(str(path / "report" / "index.html")),
                                          "models": len(tracked), "models_sized": sized,
                                          "dagster/column_schema": parquet_schema(str(path / "cheapest_setups.parquet")),
                                          "files": table([("file", "string"), ("bytes", "int")],
                                                         sorted((str(f.relative_to(path)), f.stat().st_size)
                                                                for f in path.rglob("*") if f.is_file()
                                                                and f.suffix in (".parquet", ".json")
                                                                and f.parent.name != "models"))})


OUT_ASSETS = [out__sizing, out__cheapest_setups, out__exports]
