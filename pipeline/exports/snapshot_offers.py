"""Current offers for the CLI (``vramlab gpus``, ``fit``'s prices): read from the latest published snapshot's
``offers_current.parquet``, never from the live DuckDB file (a running job may hold its lock).

A published snapshot never changes, so the first command that reads its offers keeps them as JSON in
``<data dir>/cache/cli/`` (keyed by the snapshot id and the Parquet file's size and modification time; only the
latest snapshot's file is kept): later commands load that instead of importing pyarrow, which is most of what
``gpus`` and ``fit`` would otherwise spend before answering. A cache that cannot be written (read-only data
directory) or read is ignored: the Parquet file is the source.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pipeline.data_dir import DataDir

ON_DEMAND = ("on_demand",)
SPOT_LIKE = ("spot", "marketplace", "marketplace_median", "bid_statistics")
#: ``availability_status`` values by which a source's API stated capacity to rent at fetch time (low stock
#: included); an offer without a status is listed with its capacity unknown
STATED_AVAILABLE = ("available", "low")


@dataclass(frozen=True)
class Snapshot:
    path: Path

    @property
    def id(self) -> str:
        return self.path.name


def latest_snapshot(data_dir: Path) -> Snapshot | None:
    link = DataDir(data_dir).latest
    return Snapshot(link.resolve()) if link.exists() else None


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: columns no CLI reader uses, left unread: converting timestamps to Python is most of the cost of reading the file
UNREAD = ("first_seen", "last_seen")


def _read(path: Path, columns: list[str] | None = None) -> dict[str, list[Any]]:
    """A published Parquet file as Python lists per column. pyarrow reads it (a fraction of DuckDB's start-up
    cost, so ``gpus`` and ``fit`` answer quickly); the filters are a few comparisons per row in Python.
    Timestamps are taken as their stored microseconds and made UTC datetimes here: the same instants, six times
    faster than pyarrow's per-value time-zone conversion."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    file = pq.ParquetFile(path)
    names = columns or [n for n in file.schema_arrow.names if n not in UNREAD]
    table = file.read(columns=names)
    out: dict[str, list[Any]] = {}
    for name in names:
        column = table.column(name)
        kind = column.type
        if pa.types.is_timestamp(kind) and kind.unit == "us" and kind.tz in ("UTC", "+00:00"):
            out[name] = [None if v is None else _EPOCH + timedelta(microseconds=v)
                         for chunk in column.chunks for v in chunk.view(pa.int64()).to_pylist()]
        else:
            out[name] = column.to_pylist()
    return out


CACHE_FORMAT = 3
#: the columns CLI readers use (gpus' rows, the filters, the setups planner's offer fields): the cache keeps these
COLUMNS = ("offer_key", "source", "provider", "instance_type", "region", "gpu_name", "gpu_id", "gpu_count",
           "fractional", "gpu_memory_gb", "gpu_memory_gib", "gpu_memory_gb_marketed", "form_factor", "gpu_link",
           "cluster_fabric", "cluster_gbps", "vcpus", "ram_gb", "currency", "price_per_hour_usd",
           "price_per_gpu_hour_usd", "fx_date", "allocation", "availability_status", "available_count",
           "availability_observed_at", "verified_at", "removed", "stale", "jump_unconfirmed", "allocation_class",
           "duplicate_of", "quarantined", "eligible")


def _rentable(columns: dict[str, list[Any]]) -> list[int]:
    """Rows any CLI query may return: the published ``eligible`` column (the ``offers_judged`` view's verdict,
    sql/020: never re-derived here). A snapshot without it (published before the offer-quality stage) has no
    rentable offer: run ``vramlab run`` to publish one."""
    eligible = columns.get("eligible") or []
    return [i for i, e in enumerate(eligible) if e is True]


def _offer_columns(snapshot: Snapshot) -> tuple[dict[str, list[Any]], list[str]]:
    """The snapshot's rentable offers (:func:`_rentable`, :data:`COLUMNS`) as column lists, and every provider
    of the file; from the CLI cache when it is current."""
    path = snapshot.path / "offers_current.parquet"
    stat = path.stat()
    stamp = {"format": CACHE_FORMAT, "snapshot": snapshot.id, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    cache_dir = DataDir(snapshot.path.parent.parent).cli_cache  # the snapshot is <data dir>/exports/<id>
    cache = cache_dir / f"offers-{snapshot.id}.json"
    try:
        kept = json.loads(cache.read_text())
        if kept.get("stamp") == stamp:
            columns = kept["columns"]
            for name in kept["timestamps"]:
                columns[name] = [None if v is None else datetime.fromisoformat(v) for v in columns[name]]
            return columns, kept["providers"]
    except (OSError, ValueError, KeyError, TypeError):
        pass  # no cache yet, or not readable: the Parquet file is the source
    everything = _read(path)
    rows = _rentable(everything)
    columns = {n: [everything[n][i] for i in rows] for n in COLUMNS if n in everything}
    providers = sorted(set(everything["provider"]))
    timestamps = [n for n, values in columns.items()
                  if isinstance(next((v for v in values if v is not None), None), datetime)]
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"stamp": stamp, "timestamps": timestamps, "providers": providers, "columns": {
            n: [v.isoformat() if isinstance(v, datetime) else v for v in values] if n in timestamps else values
            for n, values in columns.items()}})
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, cache)  # atomic: a concurrent reader sees the old file or the new one
        for old in cache_dir.glob("offers-*.json"):
            if old != cache:
                old.unlink(missing_ok=True)
    except (OSError, TypeError, ValueError):
        pass  # a read-only data directory: answer without a cache
    return columns, providers


def keep_offers(snapshot_path: Path) -> None:
    """Write the CLI's offers cache of a snapshot just published (``out__exports`` calls this): the first ``gpus``
    or ``fit`` after a run then answers without importing pyarrow (~0.07 s of its start-up). Best effort: a
    snapshot without the cache is read from its Parquet file as before."""
    try:
        _offer_columns(Snapshot(snapshot_path))
    except (OSError, ValueError, KeyError):
        pass


def current_offers(snapshot: Snapshot, *, gpu: str | None = None, count: int | None = None,
                   provider: str | None = None, region: str | None = None, max_price: float | None = None,
                   spot: bool = False, gpus: tuple[str, ...] | None = None, max_count: int | None = None,
                   available: bool = False) -> list[dict[str, Any]]:
    """Rentable offers (:func:`_rentable`), cheapest GPU-hour first. ``gpu`` (one id) or ``gpus`` (a family:
    any of these ids) keep those GPUs; ``count`` the instances of that many GPUs, ``max_count`` of at most that
    many; ``available`` the offers the source stated capacity for (:data:`STATED_AVAILABLE`). ``max_price`` caps the
    $/GPU-hour;
    ``provider`` and ``region`` match case-insensitively (region as a prefix, so ``us`` finds ``us-east-1``).
    Ties: $/h, provider, instance type, region (none last), offer key (one order on every run)."""
    allocations = SPOT_LIKE if spot else ON_DEMAND
    wanted = set(gpus or ()) | ({gpu} if gpu else set())
    provider_key = provider.lower() if provider else None
    region_key = region.lower() if region else None
    c, _ = _offer_columns(snapshot)  # the filters read single columns; a row becomes a dict only when it passes
    out = []
    for i in range(len(c["offer_key"])):
        gpu_id = c["gpu_id"][i]
        if c["allocation"][i] not in allocations or (wanted and gpu_id not in wanted) or (count and c["gpu_count"][i] != count):
            continue
        if (max_count is not None and c["gpu_count"][i] > max_count) or (
                available and c["availability_status"][i] not in STATED_AVAILABLE):
            continue
        if provider_key and c["provider"][i].lower() != provider_key:
            continue
        if region_key is not None and not (c["region"][i] or "").lower().startswith(region_key):
            continue
        if max_price is not None and not c["price_per_gpu_hour_usd"][i] <= max_price:
            continue
        out.append({name: values[i] for name, values in c.items()})
    out.sort(key=lambda o: (o["price_per_gpu_hour_usd"], o["price_per_hour_usd"], o["provider"],
                            o["instance_type"], o["region"] is None, o["region"] or "", o["offer_key"]))
    return out


def cheapest_by(offers: list[dict[str, Any]], *key: str) -> list[dict[str, Any]]:
    """The first (cheapest: :func:`current_offers`' order) offer per value of the ``key`` columns, in that order,
    each with ``offer_count`` (the offers of its group) and ``regions`` (their distinct regions, sorted; an offer
    naming none adds none)."""
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    regions: dict[tuple[Any, ...], set[str]] = {}
    for offer in offers:
        k = tuple(offer[c] for c in key)
        if k not in groups:
            groups[k] = dict(offer) | {"offer_count": 0}
            regions[k] = set()
        groups[k]["offer_count"] += 1
        if offer.get("region"):
            regions[k].add(offer["region"])
    return [row | {"regions": sorted(regions[k])} for k, row in groups.items()]


def providers(snapshot: Snapshot) -> list[str]:
    return _offer_columns(snapshot)[1]


def regions(snapshot: Snapshot) -> list[str]:
    """Every region a rentable offer of the snapshot names, sorted (what ``--region`` is matched against)."""
    return sorted({r for r in _offer_columns(snapshot)[0].get("region", []) if r})
