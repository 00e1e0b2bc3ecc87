"""Drift canaries for live fetches: an unknown top-level shape, a new enum value or a more
than 50% drop in offers against the last good fetch marks the source ``degraded`` in the fetch log, the manifest
and the raw asset's metadata, keeps the last good offers published and says what changed.

Live fetches are driven through the real ``run_source`` with ``httpx.MockTransport`` at the network boundary
(RunPod's constructed issue-24 answer in the genuine gpuTypes layout: 27 offers when healthy)."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from pipeline.assets.raw import _metadata
from pipeline.sources import PRICE_SOURCES
from pipeline.sources.drift import ACCEPT_AFTER, load_baseline
from pipeline.sources.fx import FxRates
from pipeline.sources.http import make_client
from pipeline.sources.landing import read_log, run_source
from pipeline.storage.db import connect
from pipeline.storage.loaders import (
    load_fetch_log,
    load_observations,
    mark_loaded,
    offers_from_landing,
    pending_fetches,
    rebuild_current,
    source_freshness,
)

FIXTURE = Path(__file__).parent / "fixtures" / "prices" / "runpod.gpuTypes.defect_classes.json"
GOOD = json.loads(FIXTURE.read_text())
T0 = datetime(2026, 12, 1, 10, tzinfo=UTC)
RUNPOD = PRICE_SOURCES["runpod"]
HEALTHY_OFFERS = 4 + 3 + (4 * 2 + 4) + 2 * 2 + 4  # 27: counted by hand in tests/test_sources_defect_classes.py


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNPOD_API_KEY", "test-key")  # a live (not replayed) fetch of a keyed source


def fetch(data_dir: Path, body: dict, when: datetime, *, replay: bool = False):  # type: ignore[no-untyped-def]
    client = make_client(httpx.MockTransport(lambda _r: httpx.Response(200, json=body)), sleep=lambda _s: None,
                         min_interval=0.0)
    with client:
        return run_source(RUNPOD, client, data_dir, None, replay=replay, now=when)


def with_new_key() -> dict:
    return GOOD | {"extensions": {"cost": 12}}


def with_new_stock_status() -> dict:
    body = copy.deepcopy(GOOD)
    body["data"]["gpuTypes"][0]["lowestPrice"]["stockStatus"] = "Scarce"
    return body


def with_few_types() -> dict:
    body = copy.deepcopy(GOOD)
    body["data"]["gpuTypes"] = [t for t in body["data"]["gpuTypes"] if t["maxGpuCount"] == 1]  # 4 types
    return body


def test_a_healthy_fetch_becomes_the_baseline(tmp_path: Path) -> None:
    entry, result = fetch(tmp_path, GOOD, T0)
    assert entry.outcome == "ok" and entry.drift == [] and len(result.offers) == HEALTHY_OFFERS
    baseline = load_baseline(tmp_path, "runpod")
    assert baseline is not None and (baseline.offers, baseline.shape) == (HEALTHY_OFFERS, ["data"])


@pytest.mark.parametrize(("body", "says"), [
    (with_new_key(), "top-level shape changed since the last good fetch of 2026-12-01T10:00:00+00:00: "
                     "new keys ['extensions']"),
    (with_new_stock_status(), "new stockStatus values ['Scarce'] (known: ['High', 'Medium', 'Low'])"),
    (with_few_types(), f"offers fell from {HEALTHY_OFFERS} to 4 (-85%) since the last good fetch of "
                       "2026-12-01T10:00:00+00:00"),
])
def test_each_canary_degrades_the_source_and_says_what_changed(tmp_path: Path, body: dict, says: str) -> None:
    fetch(tmp_path, GOOD, T0)
    entry, _ = fetch(tmp_path, body, T0 + timedelta(hours=1))
    assert entry.outcome == "degraded" and entry.drift == [says] and entry.message == f"drift: {says}"
    assert _metadata(entry, replay=False)["degraded"] is True  # the raw asset's metadata in the Dagster UI
    assert load_baseline(tmp_path, "runpod").fetched_at == T0  # type: ignore[union-attr]  # still the good one


def test_a_degraded_fetch_keeps_the_last_good_offers_published(tmp_path: Path) -> None:
    """The degraded fetch is logged and landed but never loaded: offers_current keeps the 27 good offers (not
    removed), the source reads degraded with its drift (what the manifest publishes), and the good offers turn
    stale two hours after their last verification like any unrefreshed price."""
    fetch(tmp_path, GOOD, T0)
    fetch(tmp_path, with_few_types(), T0 + timedelta(hours=1))
    con = connect(tmp_path / "v.duckdb")
    load_fetch_log(con, read_log(tmp_path))
    pending = pending_fetches(con)
    assert [p[1] for p in pending] == [T0]  # the degraded fetch is not pending
    parsed = offers_from_landing(pending, FxRates(date="2024-02-27", per_eur={"EUR": 1, "USD": 1.0856}), tmp_path)
    load_observations(con, parsed)
    mark_loaded(con, parsed.parsed, T0 + timedelta(hours=1))
    counts = rebuild_current(con, T0 + timedelta(hours=1))
    assert (counts["offers"], counts["removed"], counts["stale"]) == (HEALTHY_OFFERS, 0, 0)
    [runpod] = source_freshness(con, T0 + timedelta(hours=1))
    assert runpod["degraded"] and runpod["last_outcome"] == "degraded" and runpod["verified_at"] == T0
    assert runpod["drift"] == [f"offers fell from {HEALTHY_OFFERS} to 4 (-85%) since the last good fetch of "
                               "2026-12-01T10:00:00+00:00"]
    assert rebuild_current(con, T0 + timedelta(hours=3))["stale"] == HEALTHY_OFFERS
    con.close()


def test_the_same_drift_three_times_in_a_row_is_accepted(tmp_path: Path) -> None:
    fetch(tmp_path, GOOD, T0)
    outcomes = [fetch(tmp_path, with_new_key(), T0 + timedelta(hours=h))[0].outcome
                for h in range(1, ACCEPT_AFTER + 2)]
    assert outcomes == ["degraded"] * (ACCEPT_AFTER - 1) + ["ok", "ok"]
    assert load_baseline(tmp_path, "runpod").shape == ["data", "extensions"]  # type: ignore[union-attr]


def test_replayed_fetches_are_never_judged(tmp_path: Path) -> None:
    fetch(tmp_path, GOOD, T0)
    entry, _ = fetch(tmp_path, with_few_types(), T0 + timedelta(hours=1), replay=True)
    assert entry.outcome == "ok" and entry.drift == []
