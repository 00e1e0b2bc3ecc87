"""Assemble one snapshot from DuckDB: per-model JSON, index, Parquet tables, JSON Schemas, manifest."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import duckdb
import polars as pl
from pydantic import ValidationError

from pipeline.compute.serving_cache import ServingCache
from pipeline.compute.setups import FX_STALE_AFTER_DAYS, fx_age_days
from pipeline.compute.tracked import Tracked
from pipeline.compute.workers import in_workers
from pipeline.exports.dictionary import dictionary
from pipeline.exports.history import append_history, link_into
from pipeline.exports.model_json import assemble_model_export, js_numbers, released_date, static_export
from pipeline.exports.parquet import write_parquet
from pipeline.exports.publish import SnapshotWriter, prune, snapshot_id
from pipeline.exports.schema import JSON_FILES, SCHEMA_VERSION, FxStatus, IndexFile, json_schema
from pipeline.exports.static_cache import StaticCache, cache_key
from pipeline.exports.tables import TABLES, PriceObservations, PublishedTable, Sizing, select_sql
from pipeline.ingest.models import checkpoint_facts
from pipeline.report import render_report
from pipeline.report.data import left_out_rows
from pipeline.settings import variable
from pipeline.storage import published, sizing, tables
from pipeline.storage.db import utc_cursor
from pipeline.storage.loaders import source_freshness, transaction
from pipeline.text import iso_utc
from sizing_core import SizingError, size_model
from sizing_core.engines import default_engine
from sizing_core.gpus import catalog
from sizing_core.memo import forget_models


class SetupLists(Protocol):
    """Per model id, its overall (on-demand, spot, by-load) setups: a dict, or ``compute.setups_table.StoredSetups`` (which
    reads them a chunk of models at a time)."""

    def get(self, model_id: str, default: Any = None) -> Any: ...  # noqa: ANN401 - a dict's get


def keep_snapshots() -> int:
    return variable("VRAMLAB_KEEP_SNAPSHOTS").whole()


def fx_status(fx_date: str | None, as_of: datetime) -> dict[str, Any] | None:
    """The ECB rate's own date, its age at ``as_of`` and whether it is stale (the rule setups flag prices with)."""
    age = fx_age_days(fx_date, as_of)
    if fx_date is None or age is None:
        return None
    return {"date": fx_date, "ageDays": age, "stale": age > FX_STALE_AFTER_DAYS}


def _table_query(cur: duckdb.DuckDBPyConnection, table: type[PublishedTable], snap: str) -> str:
    if table is Sizing:
        return published.sizing_query(select_sql(Sizing, prefix="s.", snapshot_id=snap,
                                                 est_gpus_reason=published.sizing_reason(cur)), Sizing.row_order)
    return published.table_query(select_sql(table, snapshot_id=snap), table.db_table, table.row_order)


def publish(con: duckdb.DuckDBPyConnection, exports_dir: Path, tracked: list[Tracked],
            setups: SetupLists, *, as_of: datetime, mode: str, now: datetime,
            provenance: dict[str, Any], between_files: Callable[[str], None] | None = None,
            stats: dict[str, Any] | None = None, reuse: bool = False, workers: int = 1) -> Path:
    """Write a complete snapshot and switch ``latest`` to it. ``between_files`` is called after each file (a
    crash injected there must leave ``latest`` on the previous snapshot). With ``reuse`` (the hourly asset), each
    model file's price-independent part comes from the ``export_cache`` table when its inputs are unchanged, and
    what this run sized is stored there; ``stats`` (optional) receives which models were re-used and which were
    sized. The parts to size are computed by ``workers`` processes
    (:func:`~pipeline.compute.workers.in_workers`)."""
    snap = snapshot_id(now)
    writer = SnapshotWriter(exports_dir, snap)
    hook = between_files or (lambda _name: None)
    try:
        freshness = {f["source"]: f for f in source_freshness(con, as_of)}
        fits: dict[str, dict[str, set[str]]] = {}
        default_engines = {g.id: default_engine(g).id for g in catalog().values()}
        for model_id, gpu_id, formats in sizing.single_gpu_formats(con, 8192, default_engines):
            fits.setdefault(model_id, {})[gpu_id] = set(formats)
        index = []
        exact: list[dict[str, Any]] = []  # the exact planner's count of every cell the model files show
        static_cache = StaticCache.load(con) if reuse else StaticCache({})  # re-used from earlier runs
        served = ServingCache.from_table(ServingCache.read_table(
            con, {t.entry.id: t.revision or "" for t in tracked if t.arch is not None}, catalog())) if reuse else None
        keys = {t.entry.id: cache_key(t) for t in tracked if t.arch is not None}
        todo = [i for i, t in enumerate(tracked) if t.entry.id in keys and not static_cache.has(t.entry.id,
                                                                                                keys[t.entry.id])]
        sized = dict(zip(todo, in_workers(_static_job, ((i,) for i in todo), tracked, min(workers, len(todo))),
                         strict=True))
        for i, t in enumerate(tracked):
            if t.arch is None:
                index.append({"id": t.entry.id, "repo": t.entry.repo, "status": "failed", "name": t.entry.name,
                              "parameters": None, "path": None, "reason": t.error})
                continue
            on_demand, spot, *rest = setups.get(t.entry.id, ([], []))
            by_load = rest[0] if rest else []  # per standard load: cheapestSetupsByLoad
            used = {s.source for s in on_demand}
            verified_dates = [freshness[s]["verified_at"] for s in used if s in freshness and freshness[s]["verified_at"]]
            verified = min(verified_dates).date().isoformat() if verified_dates else None
            try:
                key = keys[t.entry.id]
                static = static_cache.get(t.entry.id, key)  # the price-independent part, from an earlier run
                if static is None:
                    static = sized.get(i) or _static_part(t)  # (again here when it failed: its error)
                    static_cache.put(t.entry.id, key, static)
                model = assemble_model_export(t, static, on_demand, spot, verified, provenance | static["sized"],
                                              iso_utc(now), fits.get(t.entry.id, {}),
                                              by_load=by_load, served=served)
            except ValidationError as exc:  # one model breaking the contract must not stop the others' files
                index.append({"id": t.entry.id, "repo": t.entry.repo, "status": "failed", "name": t.entry.name,
                              "parameters": None, "path": None,
                              "reason": f"breaks the export contract: {exc.error_count()} errors, first: "
                                        f"{'.'.join(map(str, exc.errors()[0]['loc']))}: {exc.errors()[0]['msg']}"})
                continue
            except SizingError as exc:  # e.g. a model whose maximum context is below the files' 8K scenario
                index.append({"id": t.entry.id, "repo": t.entry.repo, "status": "failed", "name": t.entry.name,
                              "parameters": None, "path": None, "reason": f"cannot be sized for its file: {exc}"})
                continue
            exact += static["exact_cells"]
            fx = fx_status(min((s.fx_date for s in on_demand if s.fx_date), default=None), as_of)
            model = model.model_copy(update={"fx": FxStatus.model_validate(fx) if fx else None})
            writer.write_json(f"models/{t.entry.id}.json", js_numbers(model.model_dump(mode="json")))
            hook(f"models/{t.entry.id}.json")
            index.append({"id": t.entry.id, "repo": t.entry.repo, "status": "ok", "name": t.entry.name,
                          "parameters": model.parameters, "path": f"models/{t.entry.id}.json", "reason": None})
        index_file = IndexFile.model_validate({"snapshot_id": snap, "models": index})
        writer.write_json("index.json", js_numbers(index_file.model_dump(mode="json")))
        hook("index.json")
        counts: dict[str, int] = {}
        cur = utc_cursor(con)
        try:
            cur.register("exact_cells", pl.DataFrame(exact, schema={
                "model_id": pl.String, "format": pl.String, "context": pl.Int32, "gpu_id": pl.String,
                "engine": pl.String, "json_column": pl.String, "exact_gpus": pl.Int32, "exact_reason": pl.String}))
            hub_dates = [(t.entry.id, t.hub.created_at) for t in tracked if t.hub is not None and t.hub.created_at]
            cur.register("hub_dates", pl.DataFrame(
                {"id": [i for i, _ in hub_dates],
                 "hub_created_at": [datetime.fromisoformat(c.replace("Z", "+00:00")) for _, c in hub_dates],
                 "hub_created_day": [released_date(None, c) for _, c in hub_dates]},
                schema={"id": pl.String, "hub_created_at": pl.Datetime("us", "UTC"), "hub_created_day": pl.String}))
            run = {"mode": mode, "as_of": as_of.isoformat()}  # into every Parquet file's key-value metadata
            for table in TABLES:
                if table is PriceObservations:
                    parts = append_history(cur, exports_dir, snap, run)
                    link_into(writer.tmp, exports_dir, parts)
                    counts[table.file] = sum(p.rows for p in parts)
                else:
                    counts[table.file.removesuffix(".parquet")] = write_parquet(
                        cur, _table_query(cur, table, snap), table, writer.path(table.file), run=run)
                hook(table.file)
        finally:
            cur.close()
        for model_cls, schema_name in JSON_FILES.values():
            writer.write_json(f"schemas/{schema_name}", json_schema(model_cls))
        writer.write_json("schemas/dictionary.json", dictionary())
        hook("schemas")
        sources = {name: {"verified_at": f["verified_at"].isoformat() if f["verified_at"] else None,
                          "last_outcome": f["last_outcome"], "stale": f["stale"], "degraded": f["degraded"],
                          "drift": f["drift"]} for name, f in freshness.items()}
        manifest = {"snapshot_id": snap, "generated_at": now.isoformat(), "schema_version": SCHEMA_VERSION,
                    "mode": mode, "as_of": as_of.isoformat(), "sources": sources, "row_counts": counts,
                    "history": [p.model_dump() for p in parts],
                    "fx": fx_status(tables.latest_fx_date(con), as_of)}
        manifest["left_out"] = left_out_rows(writer.tmp)  # what a reader cannot place, counted, never raised
        render_report(writer.tmp, manifest=manifest, workers=workers)  # report/: from this snapshot's own files
        hook("report")
        final = writer.finish(manifest)
    except BaseException:
        writer.abandon()
        raise
    if reuse:  # after the switch: the snapshot is published whatever happens to the caches
        static_cache.save(con, {t.entry.id for t in tracked})
        if served is not None:
            with transaction(con):
                ServingCache.write(con, served.delta())
    if stats is not None:
        stats.update(models_reused=sorted(static_cache.hits), models_sized=sorted(static_cache.new),
                     servings_reused=served.hits["serving"] if served else 0,
                     servings_computed=served.misses["serving"] if served else 0)
    skipped: dict[str, str] = {}
    prune(exports_dir, keep_snapshots(), skipped)
    if stats is not None:
        stats.update(prune_skipped=skipped, left_out=manifest["left_out"])
    return final


def _static_part(t: Tracked) -> dict[str, Any]:
    """The price-independent part of a model's file, sized from the checkpoint's own facts: headers (exact bytes
    and parameters), else the index's total_size and the Hub's stored-element count, each published in its own
    field."""
    return static_export(t, size_model(t.arch, checkpoint=checkpoint_facts(t.hub)))


def _static_job(tracked: list[Tracked], i: int) -> dict[str, Any] | None:
    """:func:`_static_part` of model ``i`` in a worker (``tracked``: what it forked with); None when it fails: the
    step sizes that model again itself, where the error is reported as the model's own. Its per-model memos are
    dropped after it, as after a setups chunk: no later job asks about the same model."""
    try:
        return _static_part(tracked[i])
    except Exception:
        return None
    finally:
        forget_models()


def read_manifest(snapshot: Path) -> dict[str, Any]:
    return json.loads((snapshot / "manifest.json").read_text())
