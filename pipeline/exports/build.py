"""Assemble one snapshot from DuckDB: per-model JSON, index, Parquet tables, JSON Schemas, manifest."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from pipeline.compute.setups import Setup
from pipeline.compute.tracked import Tracked
from pipeline.exports.model_json import build_model_export
from pipeline.exports.publish import SnapshotWriter, prune, snapshot_id
from pipeline.exports.schema import SCHEMA_VERSION, Manifest, ModelExport
from pipeline.report import render_report
from pipeline.storage.loaders import source_freshness
from sizing_core import size_model
from sizing_core.engines import default_engine
from sizing_core.gpus import catalog

PARQUET_TABLES = {
    "models": "SELECT * FROM models",
    "gpus": "SELECT * FROM gpus",
    "offers_current": "SELECT * FROM offers_current",
    "sizing": "SELECT * FROM sizing",
    "cheapest_setups": "SELECT * FROM cheapest_setups",
}


def keep_snapshots() -> int:
    return int(os.environ.get("VRAMLAB_KEEP_SNAPSHOTS", "5"))


def _copy_parquet(con: duckdb.DuckDBPyConnection, query: str, target: Path, snap: str,
                  partition: str | None = None) -> int:
    rows = con.execute(f"SELECT count(*) FROM ({query})").fetchall()[0][0]
    select = f"SELECT *, '{snap}'::VARCHAR AS snapshot_id FROM ({query})"
    if partition:
        con.execute(f"COPY ({select}) TO '{target}' (FORMAT parquet, PARTITION_BY ({partition}), OVERWRITE_OR_IGNORE)")
    else:
        con.execute(f"COPY ({select}) TO '{target}' (FORMAT parquet)")
    return rows


def publish(con: duckdb.DuckDBPyConnection, exports_dir: Path, tracked: list[Tracked],
            setups: dict[str, tuple[list[Setup], list[Setup]]], *, as_of: datetime, mode: str, now: datetime,
            provenance: dict[str, Any], between_files: Callable[[str], None] | None = None) -> Path:
    """Write a complete snapshot and switch ``latest`` to it. ``between_files`` is called after each file (a
    crash injected there must leave ``latest`` on the previous snapshot)."""
    snap = snapshot_id(now)
    writer = SnapshotWriter(exports_dir, snap)
    hook = between_files or (lambda _name: None)
    try:
        freshness = {f["source"]: f for f in source_freshness(con, as_of)}
        fits: dict[str, dict[str, set[str]]] = {}
        default_engines = {g.id: default_engine(g).id for g in catalog().values()}
        for model_id, gpu_id, engine, fmt in con.execute(
                "SELECT model_id, gpu_id, engine, format FROM sizing WHERE context = 8192 AND fits_single").fetchall():
            if default_engines.get(gpu_id) == engine:
                fits.setdefault(model_id, {}).setdefault(gpu_id, set()).add(fmt)
        index = []
        for t in tracked:
            if t.arch is None:
                index.append({"id": t.entry.id, "repo": t.entry.repo, "status": "failed", "reason": t.error})
                continue
            on_demand, spot = setups.get(t.entry.id, ([], []))
            used = {s.source for s in on_demand}
            verified_dates = [freshness[s]["verified_at"] for s in used if s in freshness and freshness[s]["verified_at"]]
            verified = min(verified_dates).date().isoformat() if verified_dates else None
            model = build_model_export(t, size_model(t.arch), on_demand, spot, verified, provenance,
                                       now.isoformat().replace("+00:00", "Z"), fits.get(t.entry.id, {}))
            writer.write_json(f"models/{t.entry.id}.json", model.model_dump(mode="json"))
            hook(f"models/{t.entry.id}.json")
            index.append({"id": t.entry.id, "name": t.entry.name, "repo": t.entry.repo, "status": "ok",
                          "parameters": model.parameters, "path": f"models/{t.entry.id}.json"})
        writer.write_json("index.json", {"snapshot_id": snap, "models": index})
        hook("index.json")
        counts = {}
        for table, query in PARQUET_TABLES.items():
            counts[table] = _copy_parquet(con, query, writer.path(f"{table}.parquet"), snap)
            hook(f"{table}.parquet")
        counts["price_observations"] = _copy_parquet(
            con, "SELECT *, strftime(observed_at, '%Y-%m-%d') AS date FROM price_observations",
            writer.path("price_observations"), snap, partition="date")
        hook("price_observations")
        writer.write_json("schemas/model.schema.json", ModelExport.model_json_schema())
        writer.write_json("schemas/manifest.schema.json", Manifest.model_json_schema())
        hook("schemas")
        sources = {name: {"verified_at": f["verified_at"].isoformat() if f["verified_at"] else None,
                          "last_outcome": f["last_outcome"], "stale": f["stale"]} for name, f in freshness.items()}
        manifest = {"snapshot_id": snap, "generated_at": now.isoformat(), "schema_version": SCHEMA_VERSION,
                    "mode": mode, "as_of": as_of.isoformat(), "sources": sources, "row_counts": counts}
        render_report(writer.tmp, manifest=manifest)  # report/: rendered from this snapshot's own files
        hook("report")
        final = writer.finish(manifest)
    except BaseException:
        writer.abandon()
        raise
    prune(exports_dir, keep_snapshots())
    return final


def read_manifest(snapshot: Path) -> dict[str, Any]:
    return json.loads((snapshot / "manifest.json").read_text())
