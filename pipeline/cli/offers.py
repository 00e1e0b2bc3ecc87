"""Current offers for the CLI (``vramlab gpus``, ``fit``'s prices): read from the latest published snapshot's
``offers_current.parquet`` with DuckDB, never from the live DuckDB file (a running job may hold its lock)."""

from __future__ import annotations

from dataclasses import dataclass
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


def current_offers(snapshot: Snapshot, *, gpu: str | None = None, count: int | None = None,
                   provider: str | None = None, region: str | None = None, max_price: float | None = None,
                   spot: bool = False) -> list[dict[str, Any]]:
    """Rentable offers, cheapest GPU-hour first: not stale, removed, fractional, quarantined, a merged duplicate
    (the quality stage's ``eligible``) or an unconfirmed jump. ``max_price`` caps the $/GPU-hour; ``provider``
    and ``region`` match case-insensitively (region as a prefix, so ``us`` finds ``us-east-1``)."""
    import duckdb

    path = snapshot.path / "offers_current.parquet"
    con = duckdb.connect()
    try:
        columns = {r[0] for r in con.execute(f"DESCRIBE SELECT * FROM read_parquet('{path}')").fetchall()}
        where = ["gpu_id IS NOT NULL", "NOT stale", "NOT removed", "NOT jump_unconfirmed", "NOT fractional",
                 "price_per_hour_usd > 0"]
        if "eligible" in columns:  # the quality stage's verdict: not quarantined, not a merged duplicate (issue #10)
            where.append("coalesce(eligible, true)")
        elif "quarantined" in columns:
            where.append("NOT coalesce(quarantined, false)")
        params: list[Any] = []
        where.append(f"allocation IN ({', '.join('?' for _ in (SPOT_LIKE if spot else ON_DEMAND))})")
        params += list(SPOT_LIKE if spot else ON_DEMAND)
        if gpu:
            where.append("gpu_id = ?")
            params.append(gpu)
        if count:
            where.append("gpu_count = ?")
            params.append(count)
        if provider:
            where.append("lower(provider) = lower(?)")
            params.append(provider)
        if region:
            where.append("lower(coalesce(region, '')) LIKE lower(?) || '%'")
            params.append(region)
        if max_price is not None:
            where.append("price_per_gpu_hour_usd <= ?")
            params.append(max_price)
        cursor = con.execute(f"SELECT * FROM read_parquet('{path}') WHERE {' AND '.join(where)} "
                             "ORDER BY price_per_gpu_hour_usd, price_per_hour_usd, provider, instance_type, region, offer_key",
                             params)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    finally:
        con.close()


def providers(snapshot: Snapshot) -> list[str]:
    import duckdb

    con = duckdb.connect()
    try:
        return [r[0] for r in con.execute(f"SELECT DISTINCT provider FROM read_parquet("
                                          f"'{snapshot.path / 'offers_current.parquet'}') ORDER BY 1").fetchall()]
    finally:
        con.close()
