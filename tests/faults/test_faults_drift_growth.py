"""Drift both ways: a source that suddenly answers many times its offers (a flood of invented rows) is held back
like a sudden fall, and the next normal answer is accepted.

The fault as found: RunPod answering 50x its offers was published as 100,009 on-demand offers with no canary; the
next two normal runs were refused as "offers fell 98%", so the bogus offers stayed current while the true ones
were held back. Driven through the real ``run_source`` and loaders with ``httpx.MockTransport`` at the network
boundary (RunPod's constructed answer in the genuine gpuTypes layout: 27 offers when healthy)."""

from __future__ import annotations

import copy
from datetime import timedelta
from pathlib import Path

from test_drift_canaries import GOOD, HEALTHY_OFFERS, T0, fetch
from test_drift_canaries import key as key  # a live fetch of a keyed source: RUNPOD_API_KEY set

from pipeline.sources.drift import GROWTH_FACTOR, load_baseline
from pipeline.sources.fx import FxRates
from pipeline.sources.landing import read_log
from pipeline.storage.db import connect
from pipeline.storage.loaders import (
    load_fetch_log,
    load_observations,
    mark_loaded,
    offers_from_landing,
    pending_fetches,
    rebuild_current,
)

FLOOD_COPIES = 50


def flood() -> dict:
    """Every GPU type repeated 50 times under invented ids: 50 x 27 offers."""
    body = copy.deepcopy(GOOD)
    types = body["data"]["gpuTypes"]
    body["data"]["gpuTypes"] = [t | {"id": f"{t['id']} zone-{n}"} for n in range(FLOOD_COPIES) for t in types]
    return body


def load(data: Path, when):  # type: ignore[no-untyped-def]
    con = connect(data / "v.duckdb")
    load_fetch_log(con, read_log(data))
    parsed = offers_from_landing(pending_fetches(con), FxRates(date="2024-02-27", per_eur={"EUR": 1, "USD": 1.0856}),
                                 data)
    load_observations(con, parsed)
    mark_loaded(con, parsed.parsed, when)
    counts = rebuild_current(con, when)
    con.close()
    return counts


def test_a_flood_is_held_back_and_the_next_normal_answer_accepted(tmp_path: Path) -> None:
    fetch(tmp_path, GOOD, T0)
    assert load(tmp_path, T0)["offers"] == HEALTHY_OFFERS

    entry, result = fetch(tmp_path, flood(), T0 + timedelta(hours=1))
    assert len(result.offers) > GROWTH_FACTOR * HEALTHY_OFFERS  # the flood parses: only the canary stops it
    assert entry.outcome == "degraded", entry
    assert entry.drift and entry.drift[0].startswith(f"offers grew from {HEALTHY_OFFERS} to {len(result.offers)}")
    assert load(tmp_path, T0 + timedelta(hours=1))["offers"] == HEALTHY_OFFERS  # the flood is not published
    assert load_baseline(tmp_path, "runpod").offers == HEALTHY_OFFERS  # type: ignore[union-attr]

    entry, _ = fetch(tmp_path, GOOD, T0 + timedelta(hours=2))  # the source answers normally again
    assert entry.outcome == "ok" and entry.drift == []
    counts = load(tmp_path, T0 + timedelta(hours=2))
    assert (counts["offers"], counts["stale"]) == (HEALTHY_OFFERS, 0)


def test_a_real_growth_seen_three_hours_running_is_accepted(tmp_path: Path) -> None:
    """A drift repeating with counts that move a little (a real expansion) is the same drift: accepted after
    three hourly fetches, as a shape change is."""
    fetch(tmp_path, GOOD, T0)
    outcomes = []
    for hour, copies in ((1, 4), (2, 5), (3, 4)):
        body = copy.deepcopy(GOOD)
        types = body["data"]["gpuTypes"]
        body["data"]["gpuTypes"] = [t | {"id": f"{t['id']} r{n}"} for n in range(copies) for t in types]
        outcomes.append(fetch(tmp_path, body, T0 + timedelta(hours=hour))[0].outcome)
    assert outcomes == ["degraded", "degraded", "ok"]
