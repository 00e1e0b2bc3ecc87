"""Loaders from the raw landing into DuckDB. Each load is one transaction and idempotent: loading the same
fetches again adds nothing (fetch_log keys on (source, started_at); observations on (offer, observed_at), an
unchanged price adding no row within the hour)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import polars as pl

from pipeline.sources import CURRENCY_SOURCE, PRICE_SOURCES
from pipeline.sources.base import REFERENCE, Offer
from pipeline.sources.fx import FxRates
from pipeline.sources.huggingface import HubModel, WatchEntry
from pipeline.sources.landing import (
    HEALTHY,
    LOADABLE,
    WITH_OFFERS,
    FetchLogEntry,
    load_landed,
    resolve_raw_path,
)

if TYPE_CHECKING:
    import pyarrow as pa
from sizing_core.gpus import catalog

STALE_AFTER = timedelta(hours=2)
JUMP_FACTOR = 5.0


class transaction:
    """``with transaction(con):`` commits on success, rolls back on any error."""

    def __init__(self, con: duckdb.DuckDBPyConnection):
        self.con = con

    def __enter__(self) -> duckdb.DuckDBPyConnection:
        self.con.execute("BEGIN TRANSACTION")
        return self.con

    def __exit__(self, exc_type, exc, tb) -> None:  # type: ignore[no-untyped-def]
        self.con.execute("ROLLBACK" if exc_type else "COMMIT")


@contextmanager
def registered(con: duckdb.DuckDBPyConnection, name: str, frame: pl.DataFrame | pa.Table) -> Iterator[str]:
    """``with registered(con, name, frame):`` the frame (polars or Arrow) is a DuckDB view called ``name`` inside
    the block only."""
    con.register(name, frame)
    try:
        yield name
    finally:
        con.unregister(name)


def arrow_rows(rows: list[tuple[Any, ...]], schema: pa.Schema) -> pa.Table:
    """Rows (tuples in ``schema``'s column order) as an Arrow table, built column by column: what a forked worker
    hands back for :func:`insert_frame` (pyarrow is fork-safe, polars' thread pool is not)."""
    import pyarrow as pa

    columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema)
    return pa.Table.from_arrays([pa.array(list(c), type=f.type) for c, f in zip(columns, schema, strict=True)],
                                schema=schema)


def insert_frame(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame | pa.Table, *,
                 or_ignore: bool = False, columns: tuple[str, ...] | None = None, by_name: bool = False) -> None:
    """Insert a polars frame or an Arrow table into a table (inside the caller's transaction); ``or_ignore``
    skips key clashes; ``by_name`` matches the frame's columns to the table's by name (columns added by later
    migrations)."""
    with registered(con, f"incoming_{table}", frame) as name:
        select = ", ".join(columns) if columns else "*"
        con.execute(f"INSERT {'OR IGNORE ' if or_ignore else ''}INTO {table} {'BY NAME ' if by_name else ''}"
                    f"SELECT {select} FROM {name}")


def load_fetch_log(con: duckdb.DuckDBPyConnection, entries: list[FetchLogEntry],
                   lines: list[int] | None = None) -> list[FetchLogEntry]:
    """Insert fetch attempts not seen before; return the new ones (what the observation loader parses).
    ``lines`` are the entries' line numbers in ``fetch_log.jsonl``: stored as ``fetch_seq``, the clock-independent
    order of fetches (migration 021), and filled in for rows loaded before it."""
    if not entries:
        return []
    seqs = lines if lines is not None else [None] * len(entries)
    rows = [e.model_dump(exclude={"ignored", "retry_waits"}) | {
        "rejected_reasons": e.rejected_reasons, "unmapped": e.unmapped, "ignored": sum(e.ignored.values()),
        "ignored_reasons": [{"key": k, "value": v} for k, v in sorted(e.ignored.items())], "fetch_seq": seq}
        for e, seq in zip(entries, seqs, strict=True)]
    frame = pl.DataFrame(rows, schema_overrides={"ignored_reasons": IGNORED_REASONS, "drift": pl.List(pl.Utf8),
                                                 "fetch_seq": pl.Int64}).select(
        "source", "provider", "started_at", "finished_at", "outcome", "http_status", "message", "offers", "rejected",
        "rejected_reasons", "unmapped", "bytes", "sha256", "raw_path", "ignored", "ignored_reasons", "drift",
        "fetch_seq",
    ).unique(["source", "started_at"]).with_columns(loaded_at=pl.lit(None, dtype=pl.Datetime("us", "UTC")))
    with transaction(con):
        before = {(r[0], r[1]) for r in con.execute("SELECT source, started_at FROM fetch_log").fetchall()}
        insert_frame(con, "fetch_log", frame, or_ignore=True, by_name=True, columns=FETCH_LOG_COLUMNS)
        # rows loaded before migration 011 learn their ignored counts from the same fetch_log.jsonl lines
        with registered(con, "incoming_ignored", frame):
            con.execute("""UPDATE fetch_log SET ignored = i.ignored, ignored_reasons = map_from_entries(i.ignored_reasons)
                           FROM incoming_ignored i WHERE fetch_log.source = i.source
                           AND fetch_log.started_at = i.started_at AND fetch_log.ignored IS NULL""")
            con.execute("""UPDATE fetch_log SET fetch_seq = i.fetch_seq FROM incoming_ignored i
                           WHERE fetch_log.source = i.source AND fetch_log.started_at = i.started_at
                           AND fetch_log.fetch_seq IS NULL AND i.fetch_seq IS NOT NULL""")
    return [e for e in entries if (e.source, e.started_at) not in before]


#: ``FetchLogEntry.ignored`` (reason -> rows) as entries DuckDB turns into the MAP column ``ignored_reasons``
IGNORED_REASONS = pl.List(pl.Struct({"key": pl.Utf8, "value": pl.Int32}))
FETCH_LOG_COLUMNS = ("source", "provider", "started_at", "finished_at", "outcome", "http_status", "message", "offers",
                     "rejected", "rejected_reasons", "unmapped", "bytes", "sha256", "raw_path", "loaded_at", "ignored",
                     "map_from_entries(ignored_reasons) AS ignored_reasons",
                     "CASE WHEN len(drift) > 0 THEN drift END AS drift", "fetch_seq")


#: Hub attempts are in fetch_log too (source ``hub:<repo>``), but are not price sources: no observations, no
#: per-source freshness (their outcome per model is ``models.last_outcome``)
HUB_PREFIX = "hub:"


def pending_fetches(con: duckdb.DuckDBPyConnection) -> list[tuple[str, datetime, str]]:
    """Successful price fetches whose observations are not loaded yet: (source, started_at, raw_path)."""
    return [tuple(r) for r in con.execute(  # type: ignore[misc]
        "SELECT source, started_at, raw_path FROM fetch_log WHERE loaded_at IS NULL AND raw_path IS NOT NULL "
        "AND NOT starts_with(source, ?) "
        f"AND outcome IN {LOADABLE} ORDER BY started_at", [HUB_PREFIX]).fetchall()]


class LandingParse(list):
    """Offers parsed from pending fetches (a list of ``(offer, raw_sha256)``), plus the fetches that failed."""

    def __init__(self) -> None:
        super().__init__()
        self.parsed: list[tuple[str, datetime, str]] = []  # fetches whose offers are in this list
        self.failed: list[tuple[str, datetime, str, str]] = []  # (source, started_at, raw_path, reason)


def offers_from_landing(pending: list[tuple[str, datetime, str]], rates: FxRates,
                        data_dir: Path | None = None) -> LandingParse:
    """Parse the landed payload of each pending fetch: the same code path as re-parsing history after a fix.

    Each fetch is isolated: one unreadable or unparseable payload is reported in ``.failed`` (and stays pending,
    so a parser fix picks it up) while every other fetch is parsed. ``raw_path`` is resolved against
    ``data_dir`` (relative paths; old absolute paths of a moved data directory)."""
    out = LandingParse()
    for source_name, started, raw_path in pending:
        source = PRICE_SOURCES.get(source_name)
        if source is None:  # the currency source: no offers, nothing to parse, done
            out.parsed.append((source_name, started, raw_path))
            continue
        path = resolve_raw_path(raw_path, data_dir) if data_dir is not None else Path(raw_path)
        try:
            raw = load_landed(path)
            offers = source.parse(raw, rates).offers
        except Exception as exc:  # noqa: BLE001 - isolate the fetch, report it, keep going
            out.failed.append((source_name, started, raw_path, f"{type(exc).__name__}: {exc}"))
            continue
        digest = raw.sha256  # hashes the whole payload: once per fetch, not once per offer
        out += [(offer, digest) for offer in offers]
        out.parsed.append((source_name, started, raw_path))
    return out


def mark_loaded(con: duckdb.DuckDBPyConnection, pending: list[tuple[str, datetime, str]], when: datetime) -> None:
    with transaction(con):
        for source, started, *_ in pending:
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
                "unit_scale", "fx_rate", "fx_date", "allocation", "availability", "mapping_version", "raw_sha256",
                *(FACT_COLUMNS := ("gpu_share", "gpu_memory_gib", "gpu_memory_gb_marketed", "form_factor", "gpu_link",
                                   "cluster_fabric", "cluster_gbps", "interconnect_source", "availability_status",
                                   "available_count")))
#: price_observations' quality verdict (sql/020), stamped by the offer-quality stage, NULL when loaded
QUALITY_COLUMNS = ("quarantined", "quality_reasons", "eligible")


#: $/GPU-hour above which a price is not believable for that kind of GPU (a 100x unit mistake lands far above)
PRICE_CEILING = {"datacenter": 80.0, "workstation": 20.0, "consumer": 10.0, "unified": 10.0, "apple": 10.0}
UNMAPPED_CEILING = 100.0


def price_ceiling(gpu_id: str | None) -> float:
    gpu = catalog().get(gpu_id) if gpu_id else None
    return PRICE_CEILING.get(gpu.kind, UNMAPPED_CEILING) if gpu is not None else UNMAPPED_CEILING


def implausible(offer: Offer) -> str | None:
    """Why a price cannot be true (quarantined instead of observed), or None."""
    if not offer.price_per_hour_usd > 0:
        return f"price {offer.price_per_hour_usd!r} USD/h is not positive"
    ceiling = price_ceiling(offer.gpu_id)
    if offer.price_per_gpu_hour_usd > ceiling:
        return (f"{offer.price_per_gpu_hour_usd:.2f} USD per GPU-hour is above the {ceiling:.0f} USD ceiling for "
                f"{offer.gpu_id or 'an unmapped GPU'} (a unit or decimal mistake at the source?)")
    return None


def load_observations(con: duckdb.DuckDBPyConnection, offers: list[tuple[Offer, str]]) -> int:
    """Append observations; returns rows added. See :func:`load_observations_detailed`."""
    return load_observations_detailed(con, offers)["added"]


def load_observations_detailed(con: duckdb.DuckDBPyConnection, offers: list[tuple[Offer, str]],
                               now: datetime | None = None) -> dict[str, Any]:
    """Append observations in one transaction.

    - One row per offer per fetch time, but an unchanged price within the same hour adds no row (the hourly
      record stays compact) while a price change within the hour is kept as a new row.
    - Implausible prices (:func:`implausible`) go to ``price_quarantine`` with the reason, not to
      ``price_observations``: one impossible price never blocks the healthy ones.
    - Idempotent: loading the same fetches again adds nothing.
    Returns ``added``, ``quarantined`` (count) and ``quarantine`` (up to 20 (offer_key, reason) pairs)."""
    if not offers:
        return {"added": 0, "quarantined": 0, "quarantine": []}
    rows, held = [], []
    for offer, sha in offers:
        reason = implausible(offer)
        if reason is not None:
            held.append({"offer_key": offer.offer_key, "observed_at": offer.observed_at, "source": offer.source,
                         "instance_type": offer.instance_type, "gpu_id": offer.gpu_id, "allocation": offer.allocation,
                         "price_per_hour_usd": offer.price_per_hour_usd,
                         "price_per_gpu_hour_usd": offer.price_per_gpu_hour_usd, "reason": reason,
                         "raw_sha256": sha, "quarantined_at": now or datetime.now(offer.observed_at.tzinfo)})
            continue
        row = offer.model_dump()
        row.update(offer_key=offer.offer_key, raw_sha256=sha,
                   observed_hour=offer.observed_at.replace(minute=0, second=0, microsecond=0))
        rows.append({k: row[k] for k in _OBS_COLUMNS})
    with transaction(con):
        before = con.execute("SELECT count(*) FROM price_observations").fetchall()[0][0]
        if rows:
            frame = (pl.DataFrame(rows, infer_schema_length=None)
                     .unique(["offer_key", "observed_at"], keep="first", maintain_order=True)
                     .sort("offer_key", "observed_at")
                     .with_columns(_prev=pl.col("price_per_hour").shift(1).over("offer_key", "observed_hour"))
                     .filter(pl.col("_prev").is_null() | (pl.col("_prev") != pl.col("price_per_hour")))
                     .drop("_prev"))
            with registered(con, "incoming_obs", frame):
                cols = ", ".join(f"i.{c}" for c in _OBS_COLUMNS)
                con.execute(f"""
                    INSERT OR IGNORE INTO price_observations ({", ".join(_OBS_COLUMNS)})
                    SELECT {cols} FROM incoming_obs i
                    WHERE (SELECT arg_max(o.price_per_hour, o.observed_at) FROM price_observations o
                           WHERE o.offer_key = i.offer_key AND o.observed_hour = i.observed_hour
                             AND o.observed_at < i.observed_at) IS DISTINCT FROM i.price_per_hour""")
        after = con.execute("SELECT count(*) FROM price_observations").fetchall()[0][0]
        if held:
            insert_frame(con, "price_quarantine", pl.DataFrame(held, infer_schema_length=None), or_ignore=True,
                         columns=("offer_key", "observed_at", "source", "instance_type", "gpu_id", "allocation",
                                  "price_per_hour_usd", "price_per_gpu_hour_usd", "reason", "raw_sha256",
                                  "quarantined_at"))
    return {"added": after - before, "quarantined": len(held),
            "quarantine": [(h["offer_key"], h["reason"]) for h in held[:20]]}


def rebuild_current(con: duckdb.DuckDBPyConnection, as_of: datetime) -> dict[str, int]:
    """Recompute ``offers_current`` and append new ``price_changes`` in one transaction. Reference prices
    (:data:`pipeline.sources.base.REFERENCE`: a third party's record of a past price) are history only: they
    are never a current offer, so neither table holds them."""
    history_only = list(REFERENCE)
    with transaction(con):
        con.execute("""
            INSERT OR IGNORE INTO price_changes
            SELECT offer_key, prev, price_per_hour_usd, observed_at FROM (
                SELECT offer_key, observed_at, price_per_hour_usd,
                       lag(price_per_hour_usd) OVER (PARTITION BY offer_key ORDER BY observed_at) AS prev
                FROM price_observations WHERE allocation NOT IN (SELECT UNNEST(?::VARCHAR[])))
            WHERE prev IS NOT NULL AND prev <> price_per_hour_usd""", [history_only])
        con.execute("DELETE FROM offers_current")
        facts = ", ".join(f"r.{c}" for c in FACT_COLUMNS)
        con.execute(f"""
            INSERT INTO offers_current (offer_key, source, provider, instance_type, region, zone, gpu_name, gpu_id,
                   gpu_count, fractional, gpu_memory_gb, vcpus, ram_gb, currency, price_per_hour, price_per_gpu_hour,
                   price_per_hour_usd, price_per_gpu_hour_usd, unit, fx_date, allocation, availability, first_seen,
                   last_seen, verified_at, removed, stale, previous_price_usd, jump_unconfirmed,
                   {", ".join(FACT_COLUMNS)})
            WITH ranked AS (
                SELECT *, row_number() OVER w AS rn, lag(price_per_hour_usd) OVER (PARTITION BY offer_key
                       ORDER BY observed_at) AS prev_price,
                       min(observed_at) OVER (PARTITION BY offer_key) AS first_seen,
                       max(observed_at) OVER (PARTITION BY offer_key) AS last_seen
                FROM price_observations WHERE allocation NOT IN (SELECT UNNEST(?::VARCHAR[]))
                WINDOW w AS (PARTITION BY offer_key ORDER BY observed_at DESC)),
            fetches AS (
                SELECT source,
                       max(started_at) FILTER (WHERE outcome IN {WITH_OFFERS}) AS last_ok,
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
                   coalesce(r.price_per_hour_usd > ? * r.prev_price OR r.prev_price > ? * r.price_per_hour_usd, false),
                   {facts}
            FROM ranked r LEFT JOIN fetches f USING (source)
            WHERE r.rn = 1""", [history_only, JUMP_FACTOR, JUMP_FACTOR])
        con.execute("UPDATE offers_current SET stale = verified_at < ?", [as_of - STALE_AFTER])
    counts = con.execute("""SELECT count(*), count(*) FILTER (WHERE stale), count(*) FILTER (WHERE removed),
                            count(*) FILTER (WHERE jump_unconfirmed) FROM offers_current""").fetchall()[0]
    return dict(zip(("offers", "stale", "removed", "jumps"), counts, strict=True))


def source_freshness(con: duckdb.DuckDBPyConnection, as_of: datetime) -> list[dict[str, Any]]:
    """Per source: the last successful fetch (its verification time), the last outcome, its age, and whether the
    last attempt was ``degraded`` by a drift canary (with what changed)."""
    rows = con.execute(f"""
        SELECT source,
               max(started_at) FILTER (WHERE outcome IN {HEALTHY}) AS verified_at,
               arg_max(outcome, started_at) AS last_outcome, max(started_at) AS last_attempt,
               arg_max(coalesce(drift, []), started_at) AS drift
        FROM fetch_log WHERE NOT starts_with(source, ?) GROUP BY source ORDER BY source""", [HUB_PREFIX]).fetchall()
    out = []
    for source, verified, outcome, attempt, drift in rows:
        age = (as_of - verified).total_seconds() / 3600 if verified else None
        out.append({"source": source, "verified_at": verified, "last_outcome": outcome, "last_attempt": attempt,
                    "age_hours": age, "stale": age is None or age > STALE_AFTER.total_seconds() / 3600,
                    "degraded": outcome == "degraded", "drift": list(drift or []) if outcome == "degraded" else []})
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


#: ``models`` columns in table order (sql/002)
MODEL_COLUMNS = ("id", "repo", "name", "lab", "country", "released", "base_model", "spec", "current_sha", "last_outcome",
                 "pipeline_tag", "license", "gguf_files", "derived", "updated_at")


def load_models(con: duckdb.DuckDBPyConnection, results: list[tuple[WatchEntry, FetchLogEntry | None, HubModel | None]],
                revisions: list[HubModel], now: datetime) -> dict[str, int]:
    """Upsert the model list and add every stored Hub revision not yet in ``model_revisions``: the models in one
    statement, the revisions only when new (one statement per model and per stored revision, most of
    them no-ops, costs ~0.5 s an hour)."""
    rows = {entry.id: {
        "id": entry.id, "repo": entry.repo, "name": entry.name, "lab": entry.lab, "country": entry.country,
        "released": entry.released or (model.created_at[:10] if model and model.created_at else None),
        "base_model": entry.base_model, "spec": entry.spec, "current_sha": model.sha if model else None,
        "last_outcome": log.outcome if log else "spec", "pipeline_tag": model.pipeline_tag if model else None,
        "license": model.license if model else None,
        "gguf_files": json.dumps(model.gguf_files) if model and model.gguf_files else None,
        "derived": json.dumps({k: v.model_dump() for k, v in model.derived.items()}) if model else None,
        "updated_at": now} for entry, log, model in results}  # (one row per id: the last, as upserts in turn)
    frame = pl.DataFrame(list(rows.values()), schema={**{c: pl.String for c in MODEL_COLUMNS[:-1]},
                                                      "updated_at": pl.Datetime("us", "UTC")})
    with transaction(con):
        if rows:
            with registered(con, "incoming_models", frame) as name:
                con.execute(f"INSERT OR REPLACE INTO models ({', '.join(MODEL_COLUMNS)}) "
                            f"SELECT {', '.join(MODEL_COLUMNS)} FROM {name}")
        before = con.execute("SELECT count(*) FROM model_revisions").fetchall()[0][0]
        stored = set(con.execute("SELECT repo, sha FROM model_revisions").fetchall())
        new = [[rev.repo, rev.sha, rev.last_modified, rev.fetched_at, json.dumps(rev.config),
                json.dumps(rev.hf_quant_config) if rev.hf_quant_config else None, rev.safetensors_total,
                rev.checkpoint_bytes] for rev in revisions if (rev.repo, rev.sha) not in stored]
        if new:  # one statement for all (one per revision takes ~3 ms each; 2,000 discovered models)
            insert_frame(con, "model_revisions", pl.DataFrame(new, orient="row", schema={
                "repo": pl.String, "sha": pl.String, "last_modified": pl.String,
                "fetched_at": pl.Datetime("us", "UTC"), "config": pl.String, "hf_quant_config": pl.String,
                "safetensors_total": pl.Int64, "checkpoint_bytes": pl.Int64}), or_ignore=True)
        after = con.execute("SELECT count(*) FROM model_revisions").fetchall()[0][0]
    return {"models": len(results), "new_revisions": after - before}


def currency_entries(entries: list[FetchLogEntry]) -> list[FetchLogEntry]:
    return [e for e in entries if e.source == CURRENCY_SOURCE.name]


def source_fingerprints(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Per source, the sha256 of its newest fetch that landed offers (what the setups step keys its cache on)."""
    return dict(con.execute(f"""SELECT source, arg_max(sha256, started_at) FROM fetch_log
                                WHERE outcome IN {WITH_OFFERS} GROUP BY source""").fetchall())
