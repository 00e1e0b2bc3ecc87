"""DuckDB loaders on a real file: migrations, idempotent loads, price jumps, removed and stale offers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from pipeline.sources.base import Offer
from pipeline.sources.landing import FetchLogEntry
from pipeline.storage.db import connect, migrate, migrations, table_columns
from pipeline.storage.loaders import load_fetch_log, load_observations, rebuild_current, source_freshness

T0 = datetime(2026, 11, 28, 10, tzinfo=UTC)


def offer(price: float, at: datetime, instance: str = "gpu_1x_h100") -> Offer:
    return Offer(source="lambda", provider="lambda", instance_type=instance, region="us-east-1", gpu_name="H100",
                 gpu_id="h100", gpu_count=1, currency="USD", price_per_hour=price, price_per_gpu_hour=price,
                 price_per_hour_usd=price, price_per_gpu_hour_usd=price, unit="instance-hour",
                 allocation="on_demand", observed_at=at, mapping_version="test")


def fetch(at: datetime, outcome: str = "ok") -> FetchLogEntry:
    return FetchLogEntry(source="lambda", provider="lambda", started_at=at, finished_at=at, outcome=outcome)


def test_migrations_apply_once(tmp_path: Path) -> None:
    con = connect(tmp_path / "db.duckdb")
    assert migrate(con) == []  # connect() already applied them
    versions = [r[0] for r in con.execute("SELECT version FROM schema_version ORDER BY 1").fetchall()]
    assert versions == [v for v, _ in migrations()]
    assert "verified_at" in table_columns(con, "offers_current")


def test_loads_are_idempotent(tmp_path: Path) -> None:
    con = connect(tmp_path / "db.duckdb")
    assert len(load_fetch_log(con, [fetch(T0)])) == 1
    assert load_fetch_log(con, [fetch(T0)]) == []
    assert load_observations(con, [(offer(3.0, T0), "sha")]) == 1
    assert load_observations(con, [(offer(3.0, T0), "sha")]) == 0  # the same fetch again adds nothing
    # the same price later in the same hour adds nothing: one row per offer per hour while the price holds
    assert load_observations(con, [(offer(3.0, T0 + timedelta(minutes=10)), "sha1")]) == 0
    # a price change within the hour is an observation of its own (it used to be silently ignored)
    assert load_observations(con, [(offer(3.5, T0 + timedelta(minutes=20)), "sha2")]) == 1


def test_price_jump_needs_confirmation(tmp_path: Path) -> None:
    con = connect(tmp_path / "db.duckdb")
    for hour, price in enumerate((2.0, 20.0)):  # 10x in one hour
        at = T0 + timedelta(hours=hour)
        load_fetch_log(con, [fetch(at)])
        load_observations(con, [(offer(price, at), "s")])
    counts = rebuild_current(con, T0 + timedelta(hours=1))
    row = con.execute("SELECT jump_unconfirmed, previous_price_usd FROM offers_current").fetchall()[0]
    assert counts["jumps"] == 1 and row == (True, 2.0)
    assert con.execute("SELECT old_price_usd, new_price_usd FROM price_changes").fetchall() == [(2.0, 20.0)]
    at = T0 + timedelta(hours=2)  # a second observation at the new level confirms it
    load_fetch_log(con, [fetch(at)])
    load_observations(con, [(offer(20.0, at), "s")])
    rebuild_current(con, at)
    assert con.execute("SELECT jump_unconfirmed FROM offers_current").fetchall() == [(False,)]


def test_removed_and_stale_offers(tmp_path: Path) -> None:
    con = connect(tmp_path / "db.duckdb")
    load_fetch_log(con, [fetch(T0)])
    load_observations(con, [(offer(2.0, T0), "s"), (offer(5.0, T0, "gpu_8x_h100"), "s")])
    later = T0 + timedelta(hours=3)
    load_fetch_log(con, [fetch(later)])
    load_observations(con, [(offer(2.0, later), "s")])  # the 8x shape is gone from the source
    rebuild_current(con, later + timedelta(minutes=30))
    rows = dict(con.execute("SELECT instance_type, removed FROM offers_current").fetchall())
    assert rows == {"gpu_1x_h100": False, "gpu_8x_h100": True}
    rebuild_current(con, later + timedelta(hours=3))  # nothing new for 3 hours: stale
    assert con.execute("SELECT bool_and(stale) FROM offers_current").fetchall() == [(True,)]
    fresh = source_freshness(con, later + timedelta(hours=25))[0]
    assert fresh["stale"] and fresh["age_hours"] == 25


def test_fetch_sequence_is_filled_in_for_rows_loaded_without_it(tmp_path: Path) -> None:
    con = connect(tmp_path / "db.duckdb")
    load_fetch_log(con, [fetch(T0)])  # as before migration 021: no line number
    load_fetch_log(con, [fetch(T0)], [7])  # the next core__fetch_log reads the same line
    assert con.execute("SELECT fetch_seq FROM fetch_log").fetchall() == [(7,)]
