"""Loaders from the raw landing into DuckDB. Each load is one transaction and idempotent: loading the same
fetches again adds nothing (fetch_log keys on (source, started_at); observations on (offer, hour))."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from pipeline.sources import CURRENCY_SOURCE, PRICE_SOURCES
from pipeline.sources.base import Offer
from pipeline.sources.fx import FxRates
from pipeline.sources.huggingface import HubModel, WatchEntry
from pipeline.sources.landing import FetchLogEntry, load_landed
from sizing_core.gpus import catalog

STALE_AFTER = timedelta(hours=2)
JUMP_FACTOR = 5.0
SUCCESS = ("ok", "partial", "empty")


class transaction:
    """``with transaction(con):`` commits on success, rolls back on any error."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self.con = con

    def __enter__(self) -> duckdb.DuckDBPyConnection:
        self.con.execute("BEGIN TRANSACTION")
        return self.con

    def __exit__(self, exc_type, exc, tb) -> None:  # type: ignore[no-untyped-def]
        self.con.execute("ROLLBACK" if exc_type else "COMMIT")


def insert_frame(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame, *, or_ignore: bool = False,
                 columns: tuple[str, ...] | None = None, by_name: bool = False) -> None:
    """Insert a polars frame into a table (inside the caller's transaction); ``or_ignore`` skips key clashes;
    ``by_name`` matches the frame's columns to the table's by name (columns added by later migrations)."""
    name = f"incoming_{table}"
    con.register(name, frame)
    try:
        select = ", ".join(columns) if columns else "*"
        con.execute(f"INSERT {'OR IGNORE ' if or_ignore else ''}INTO {table} {'BY NAME ' if by_name else ''}"
                    f"SELECT {select} FROM {name}")
    finally:
        con.unregister(name)


def load_fetch_log(con: duckdb.DuckDBPyConnection, entries: list[FetchLogEntry]) -> list[FetchLogEntry]:
    """Insert fetch attempts not seen before; return the new ones (what the observation loader parses)."""
    if not entries:
        return []
    rows = [e.model_dump() | {"rejected_reasons": e.rejected_reasons, "unmapped": e.unmapped} for e in entries]
    frame = pl.DataFrame(rows).select(
        "source", "provider", "started_at", "finished_at", "outcome", "http_status", "message", "offers", "rejected",
        "rejected_reasons", "unmapped", "bytes", "sha256", "raw_path").unique(["source", "started_at"]).with_columns(
        loaded_at=pl.lit(None, dtype=pl.Datetime("us", "UTC")))
    with transaction(con):
        before = {(r[0], r[1]) for r in con.execute("SELECT source, started_at FROM fetch_log").fetchall()}
        insert_frame(con, "fetch_log", frame, or_ignore=True)
    return [e for e in entries if (e.source, e.started_at) not in before]


def pending_fetches(con: duckdb.DuckDBPyConnection) -> list[tuple[str, datetime, str]]:
    """Successful price fetches whose observations are not loaded yet: (source, started_at, raw_path)."""
    return [tuple(r) for r in con.execute(  # type: ignore[misc]
        "SELECT source, started_at, raw_path FROM fetch_log WHERE loaded_at IS NULL AND raw_path IS NOT NULL "
        f"AND outcome IN {SUCCESS} ORDER BY started_at").fetchall()]


def offers_from_landing(pending: list[tuple[str, datetime, str]], rates: FxRates) -> list[tuple[Offer, str]]:
    """Parse the landed payload of each pending fetch: the same code path as re-parsing history after a fix."""
    out = []
    for source_name, _, raw_path in pending:
        source = PRICE_SOURCES.get(source_name)
        if source is None:
            continue
        raw = load_landed(Path(raw_path))
        out += [(offer, raw.sha256) for offer in source.parse(raw, rates).offers]
    return out


def mark_loaded(con: duckdb.DuckDBPyConnection, pending: list[tuple[str, datetime, str]], when: datetime) -> None:
    with transaction(con):
        for source, started, _ in pending:
            con.execute("UPDATE fetch_log SET loaded_at = ? WHERE source = ? AND started_at = ?", [when, source, started])


def request_reparse(con: duckdb.DuckDBPyConnection, source: str) -> int:
    """After a parser fix: drop a source's observations and mark its landed fetches for loading again."""
    with transaction(con):
        con.execute("DELETE FROM price_observations WHERE source = ?", [source])
        con.execute("UPDATE fetch_log SET loaded_at = NULL WHERE source = ?", [source])
        return con.execute("SELECT count(*) FROM fetch_log WHERE source = ? AND raw_path IS NOT NULL",
                           [source]).fetchall()[0][0]


_OBS_COLUMNS = ("offer_key", "observed_hour", "observed_at", "source", "provider", "instance_type", "region", "zone",
                "gpu_name", "gpu_id", "gpu_count", "fractional", "gpu_memory_gb", "vcpus", "ram_gb", "currency",
                "price_per_hour", "price_per_gpu_hour", "price_per_hour_usd", "price_per_gpu_hour_usd", "unit",
                "unit_scale", "fx_rate", "fx_date", "allocation", "availability", "mapping_version", "raw_sha256")


def load_observations(con: duckdb.DuckDBPyConnection, offers: list[tuple[Offer, str]]) -> int:
    """Append observations; one per offer per hour (the first one of the hour wins). Returns rows added."""
    if not offers:
        return 0
    rows = []
    for offer, sha in offers:
        row = offer.model_dump()
        row.update(offer_key=offer.offer_key, raw_sha256=sha,
                   observed_hour=offer.observed_at.replace(minute=0, second=0, microsecond=0))
        rows.append({k: row[k] for k in _OBS_COLUMNS})
    frame = pl.DataFrame(rows, infer_schema_length=None).unique(["offer_key", "observed_hour"], keep="first")
    with transaction(con):
        before = con.execute("SELECT count(*) FROM price_observations").fetchall()[0][0]
        insert_frame(con, "price_observations", frame, or_ignore=True, columns=_OBS_COLUMNS)
        after = con.execute("SELECT count(*) FROM price_observations").fetchall()[0][0]
    return after - before


def rebuild_current(con: duckdb.DuckDBPyConnection, as_of: datetime) -> dict[str, int]:
    """Recompute ``offers_current`` and append new ``price_changes`` in one transaction."""
    with transaction(con):
        con.execute("""
            INSERT OR IGNORE INTO price_changes
            SELECT offer_key, prev, price_per_hour_usd, observed_at FROM (
                SELECT offer_key, observed_at, price_per_hour_usd,
                       lag(price_per_hour_usd) OVER (PARTITION BY offer_key ORDER BY observed_hour) AS prev
                FROM price_observations)
            WHERE prev IS NOT NULL AND prev <> price_per_hour_usd""")
        con.execute("DELETE FROM offers_current")
        con.execute("""
            INSERT INTO offers_current
            WITH ranked AS (
                SELECT *, row_number() OVER w AS rn, lag(price_per_hour_usd) OVER (PARTITION BY offer_key
                       ORDER BY observed_hour) AS prev_price,
                       min(observed_at) OVER (PARTITION BY offer_key) AS first_seen,
                       max(observed_at) OVER (PARTITION BY offer_key) AS last_seen
                FROM price_observations
                WINDOW w AS (PARTITION BY offer_key ORDER BY observed_hour DESC)),
            fetches AS (
                SELECT source,
                       max(started_at) FILTER (WHERE outcome IN ('ok', 'partial')) AS last_ok,
                       max(started_at) FILTER (WHERE outcome = 'unchanged') AS last_unchanged
                FROM fetch_log GROUP BY source)
            SELECT r.offer_key, r.source, r.provider, r.instance_type, r.region, r.zone, r.gpu_name, r.gpu_id,
                   r.gpu_count, r.fractional, r.gpu_memory_gb, r.vcpus, r.ram_gb, r.currency, r.price_per_hour,
                   r.price_per_gpu_hour, r.price_per_hour_usd, r.price_per_gpu_hour_usd, r.unit, r.fx_date,
                   r.allocation, r.availability, r.first_seen, r.last_seen,
                   greatest(r.last_seen, CASE WHEN f.last_unchanged > r.last_seen
                                              AND date_trunc('hour', r.last_seen) >= date_trunc('hour', f.last_ok)
                                              THEN f.last_unchanged END) AS verified_at,
                   coalesce(date_trunc('hour', r.last_seen) < date_trunc('hour', f.last_ok), false) AS removed,
                   false AS stale,
                   r.prev_price,
                   coalesce(r.price_per_hour_usd > ? * r.prev_price OR r.prev_price > ? * r.price_per_hour_usd, false)
            FROM ranked r LEFT JOIN fetches f USING (source)
            WHERE r.rn = 1""", [JUMP_FACTOR, JUMP_FACTOR])
        con.execute("UPDATE offers_current SET stale = verified_at < ?", [as_of - STALE_AFTER])
    counts = con.execute("""SELECT count(*), count(*) FILTER (WHERE stale), count(*) FILTER (WHERE removed),
                            count(*) FILTER (WHERE jump_unconfirmed) FROM offers_current""").fetchall()[0]
    return dict(zip(("offers", "stale", "removed", "jumps"), counts, strict=True))


def source_freshness(con: duckdb.DuckDBPyConnection, as_of: datetime) -> list[dict[str, Any]]:
    """Per source: the last successful fetch (its verification time), the last outcome, and its age."""
    rows = con.execute("""
        SELECT source,
               max(started_at) FILTER (WHERE outcome IN ('ok', 'partial', 'unchanged')) AS verified_at,
               arg_max(outcome, started_at) AS last_outcome, max(started_at) AS last_attempt
        FROM fetch_log GROUP BY source ORDER BY source""").fetchall()
    out = []
    for source, verified, outcome, attempt in rows:
        age = (as_of - verified).total_seconds() / 3600 if verified else None
        out.append({"source": source, "verified_at": verified, "last_outcome": outcome, "last_attempt": attempt,
                    "age_hours": age, "stale": age is None or age > STALE_AFTER.total_seconds() / 3600})
    return out


def load_gpus(con: duckdb.DuckDBPyConnection) -> int:
    rows = []
    for gpu in catalog().values():
        row_hash = hashlib.sha256(gpu.model_dump_json().encode()).hexdigest()[:16]
        rows.append({"id": gpu.id, "name": gpu.name, "vendor": gpu.vendor, "kind": gpu.kind,
                     "memory_gb": gpu.memory_gb, "memory_gib_usable": gpu.memory_bytes / 2**30,
                     "memory_source": gpu.memory_source, "bandwidth_gbs": gpu.bandwidth_gbs,
                     "fp16_tflops_dense": gpu.fp16_tflops_dense, "fp8_tflops_dense": gpu.fp8_tflops_dense,
                     "fp4_tflops_dense": gpu.fp4_tflops_dense, "supports_fp8": gpu.supports_fp8,
                     "supports_nvfp4": gpu.supports_nvfp4, "supports_mxfp4": gpu.supports_mxfp4,
                     "gpus_per_node": gpu.node_size, "tdp_w": gpu.tdp_w, "launch_msrp_usd": gpu.launch_msrp_usd,
                     "row_hash": row_hash})
    frame = pl.DataFrame(rows, infer_schema_length=None)
    with transaction(con):
        con.execute("DELETE FROM gpus")
        insert_frame(con, "gpus", frame)
    return len(rows)


def load_models(con: duckdb.DuckDBPyConnection, results: list[tuple[WatchEntry, FetchLogEntry | None, HubModel | None]],
                revisions: list[HubModel], now: datetime) -> dict[str, int]:
    """Upsert the model list and add every stored Hub revision not yet in ``model_revisions``."""
    with transaction(con):
        for entry, log, model in results:
            con.execute("""INSERT OR REPLACE INTO models VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""", [
                entry.id, entry.repo, entry.name, entry.lab, entry.country,
                entry.released or (model.created_at[:10] if model and model.created_at else None), entry.base_model,
                entry.spec, model.sha if model else None, log.outcome if log else "spec",
                model.pipeline_tag if model else None, model.license if model else None,
                json.dumps(model.gguf_files) if model and model.gguf_files else None,
                json.dumps({k: v.model_dump() for k, v in model.derived.items()}) if model else None, now])
        before = con.execute("SELECT count(*) FROM model_revisions").fetchall()[0][0]
        for rev in revisions:
            con.execute("INSERT OR IGNORE INTO model_revisions VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [
                rev.repo, rev.sha, rev.last_modified, rev.fetched_at, json.dumps(rev.config),
                json.dumps(rev.hf_quant_config) if rev.hf_quant_config else None, rev.safetensors_total,
                rev.checkpoint_bytes])
        after = con.execute("SELECT count(*) FROM model_revisions").fetchall()[0][0]
    return {"models": len(results), "new_revisions": after - before}


def currency_entries(entries: list[FetchLogEntry]) -> list[FetchLogEntry]:
    return [e for e in entries if e.source == CURRENCY_SOURCE.name]
