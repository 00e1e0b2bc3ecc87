"""Current offers for the CLI (``vramlab gpus``, ``fit``'s prices): read from the latest published snapshot's
``offers_current.parquet``, never from the live DuckDB file (a running job may hold its lock)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ON_DEMAND = ("on_demand",)
SPOT_LIKE = ("spot", "marketplace", "marketplace_median", "bid_statistics")


@dataclass(frozen=True)
class Snapshot:
    path: Path

    @property
    def id(self) -> str:
        return self.path.name


def latest_snapshot(data_dir: Path) -> Snapshot | None:
    link = data_dir / "exports" / "latest"
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


def current_offers(snapshot: Snapshot, *, gpu: str | None = None, count: int | None = None,
                   provider: str | None = None, region: str | None = None, max_price: float | None = None,
                   spot: bool = False) -> list[dict[str, Any]]:
    """Rentable offers, cheapest GPU-hour first: not stale, removed, fractional, quarantined, a merged duplicate
    (the quality stage's ``eligible``) or an unconfirmed jump. ``max_price`` caps the $/GPU-hour; ``provider``
    and ``region`` match case-insensitively (region as a prefix, so ``us`` finds ``us-east-1``). Ties: $/h,
    provider, instance type, region (none last), offer key (one order on every run)."""
    allocations = SPOT_LIKE if spot else ON_DEMAND
    provider_key = provider.lower() if provider else None
    region_key = region.lower() if region else None
    cols = _read(snapshot.path / "offers_current.parquet")
    c = cols  # the filters read single columns; a row becomes a dict only when it passes them
    n = len(c["offer_key"])
    if "eligible" in c:  # the quality stage's verdict: not quarantined, not a merged duplicate (issue #10)
        rejected = [e is False for e in c["eligible"]]
    else:  # a snapshot from before the quality stage published `eligible`
        rejected = [bool(q) for q in c.get("quarantined") or [None] * n]
    out = []
    for i in range(n):
        gpu_id, price = c["gpu_id"][i], c["price_per_hour_usd"][i]
        if (gpu_id is None or c["stale"][i] or c["removed"][i] or c["jump_unconfirmed"][i] or c["fractional"][i]
                or not (price or 0) > 0 or rejected[i] or c["allocation"][i] not in allocations):
            continue
        if (gpu and gpu_id != gpu) or (count and c["gpu_count"][i] != count):
            continue
        if provider_key and c["provider"][i].lower() != provider_key:
            continue
        if region_key is not None and not (c["region"][i] or "").lower().startswith(region_key):
            continue
        if max_price is not None and not c["price_per_gpu_hour_usd"][i] <= max_price:
            continue
        out.append({name: values[i] for name, values in cols.items()})
    out.sort(key=lambda o: (o["price_per_gpu_hour_usd"], o["price_per_hour_usd"], o["provider"],
                            o["instance_type"], o["region"] is None, o["region"] or "", o["offer_key"]))
    return out


def providers(snapshot: Snapshot) -> list[str]:
    return sorted(set(_read(snapshot.path / "offers_current.parquet", ["provider"])["provider"]))
