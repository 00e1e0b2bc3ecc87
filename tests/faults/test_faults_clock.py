"""A clock behind what is already recorded: one live run on a machine whose clock is 72 h behind the
newest recorded fetch. Before: its snapshot, dated in the past, became ``latest``, every offer was stored twice and
a real price change was recorded as older than the price it replaced. Now the run refuses to fetch or publish,
with one line naming both times; ``VRAMLAB_ALLOW_CLOCK_BEHIND=1`` lets it go on. The network boundary is the
replay transport (``client_for`` patched), everything else is the real assets in live mode."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest
from dagster_duckdb import DuckDBResource
from harness import price_assets, replay_client

from pipeline.resources import VramlabSettings
from pipeline.sources.landing import FetchLogEntry, append_log, read_log


def live_run(data: Path, monkeypatch: pytest.MonkeyPatch) -> dg.ExecuteInProcessResult:
    monkeypatch.setattr("pipeline.assets.raw.client_for", lambda *_a, **_k: replay_client())
    assets = price_assets(["skypilot-nebius"])  # keyless: a live run fetches it without a key
    db = data / "vramlab.duckdb"
    return dg.materialize(list(assets), selection=assets.selection, raise_on_error=False, resources={
        "vramlab": VramlabSettings(data_dir=str(data), db_path=str(db), live=True),
        "duckdb": DuckDBResource(database=str(db))})


def recorded_ahead(data: Path, hours: float) -> datetime:
    """A fetch recorded by an earlier run whose clock was right: ``hours`` ahead of this machine's clock now."""
    ahead = datetime.now(UTC) + timedelta(hours=hours)
    append_log(FetchLogEntry(source="lambda", provider="lambda", started_at=ahead, finished_at=ahead,
                             outcome="ok", offers=1), data)
    return ahead


def test_a_run_behind_the_recorded_clock_refuses_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VRAMLAB_ALLOW_CLOCK_BEHIND", raising=False)
    ahead = recorded_ahead(tmp_path, 72)
    result = live_run(tmp_path, monkeypatch)
    assert not result.success
    failures = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    message = failures[0].step_failure_data.user_failure_data.description
    assert "\n" not in message and "clock" in message and f"{ahead:%Y-%m-%d %H:%M}" in message, message
    assert "--allow-clock-behind" in message
    assert [e.started_at for e in read_log(tmp_path)] == [ahead]  # nothing was fetched, nothing landed
    assert not (tmp_path / "exports").exists()


def test_a_small_skew_and_an_explicit_allowance_go_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    recorded_ahead(tmp_path, 0.05)  # 3 minutes ahead: within the tolerance (NTP steps, two runs at once)
    monkeypatch.delenv("VRAMLAB_ALLOW_CLOCK_BEHIND", raising=False)
    assert live_run(tmp_path, monkeypatch).success
    other = tmp_path / "other"
    recorded_ahead(other, 72)
    monkeypatch.setenv("VRAMLAB_ALLOW_CLOCK_BEHIND", "1")
    result = live_run(other, monkeypatch)
    assert result.success and len(read_log(other)) > 1
