"""A clock ahead of the sources' own clocks: one live run on a machine whose clock is 72 h ahead.

The fault as found: that run published a snapshot dated three days on, and every run on the right clock after it
refused for 72 hours ("behind the newest recorded fetch"). Now the answer's ``Date`` header (the origin's clock,
RFC 9110) shows the skew: the fetch is landed as received but logged ``clock_ahead``, nothing is loaded or
published, the run fails with one line saying so; the next run on the right clock is not locked out (a fetch
recorded ahead of its source's clock is not trusted) and stores the prices it sees. The network boundary is the
replay transport with the source's answer carrying a ``Date`` header; everything else is the real assets in live
mode."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import dagster as dg
import httpx
import pytest
from dagster_duckdb import DuckDBResource
from harness import count, price_assets, recorded, replay_client, url_of

from pipeline.resources import VramlabSettings
from pipeline.sources.landing import read_log

SOURCE = "skypilot-nebius"  # keyless: a live run fetches it without a key


def live_run(data: Path, monkeypatch: pytest.MonkeyPatch, server_now: datetime) -> dg.ExecuteInProcessResult:
    """A live run whose source answers with its own clock at ``server_now`` (and no replay time)."""
    answer = httpx.Response(200, content=recorded(SOURCE), headers={
        "content-type": "text/csv", "date": format_datetime(server_now, usegmt=True)})
    monkeypatch.setattr("pipeline.assets.raw.client_for",
                        lambda *_a, **_k: replay_client(overrides={url_of(SOURCE): answer}))
    assets = price_assets([SOURCE])
    db = data / "vramlab.duckdb"
    return dg.materialize(list(assets), selection=assets.selection, raise_on_error=False, resources={
        "vramlab": VramlabSettings(data_dir=str(data), db_path=str(db), live=True),
        "duckdb": DuckDBResource(database=str(db))})


def test_a_run_ahead_of_the_sources_clock_stores_nothing_and_does_not_lock_out_the_next(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VRAMLAB_ALLOW_CLOCK_BEHIND", raising=False)
    real = datetime.now(UTC)
    ahead = live_run(tmp_path, monkeypatch, server_now=real - timedelta(hours=72))  # this machine: 72 h ahead
    assert not ahead.success
    failure = next(e for e in ahead.all_events if e.event_type_value == "STEP_FAILURE")
    message = failure.step_failure_data.user_failure_data.description
    assert "\n" not in message and "72.0 h ahead" in message and SOURCE in message, message
    [entry] = [e for e in read_log(tmp_path) if e.source == SOURCE]
    assert entry.outcome == "clock_ahead" and entry.raw_path  # landed as received, never loaded
    assert not (tmp_path / "vramlab.duckdb").exists() or count(tmp_path / "vramlab.duckdb", "price_observations") == 0

    # the clock put right: the next run goes on without a flag and stores what it sees
    again = live_run(tmp_path, monkeypatch, server_now=datetime.now(UTC))
    assert again.success, [e.message for e in again.all_events if e.event_type_value == "STEP_FAILURE"]
    outcomes = [e.outcome for e in read_log(tmp_path) if e.source == SOURCE]
    assert outcomes[0] == "clock_ahead" and outcomes[1] in ("ok", "partial"), outcomes
    assert count(tmp_path / "vramlab.duckdb", "price_observations") > 0


def test_a_small_skew_is_not_a_clock_ahead(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two minutes of skew (NTP steps, a slow answer) is within the tolerance: stored as usual."""
    result = live_run(tmp_path, monkeypatch, server_now=datetime.now(UTC) - timedelta(minutes=2))
    assert result.success
    assert [e.outcome for e in read_log(tmp_path) if e.source == SOURCE][0] in ("ok", "partial")
