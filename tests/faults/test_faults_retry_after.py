"""A host that says "later": the Hub answers every request 429 with ``Retry-After: 86400``. A wait that long is
beyond any request's budget, so the first such answer opens a breaker for that host for the rest of the run: every
later request to it fails at once (no request sent, no wait) with one clear reason, the other hosts are fetched
as usual, and the metadata and the run summary name the host. The raw assets run for real on the Dagster graph;
only the network boundary is a loopback server. The waits are recorded, not slept, so the test measures requests,
not wall time (on the code before the fix every model cost 1 + retries requests and three 60 s waits)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from harness import FaultServer, answer, host_of, loopback_client, resources_for
from rich.console import Console

HUB_HOST = "huggingface.co"


def test_a_host_asking_to_retry_after_a_day_is_skipped_for_the_run(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """F08 Hub 429 ``Retry-After: 86400`` on every request, for every watchlist model: at most 2 requests reach
    the Hub (not models x (1 + retries)), no wait is taken for it, every Hub model is recorded with the reason,
    the price sources (on other hosts) are fetched, and prices run before the Hub step."""
    from pipeline.assets.raw import ECB_ASSET, PRICE_ASSETS, RAW_ASSETS, asset_name
    from pipeline.ops.run import summarize
    from pipeline.resources import VramlabSettings
    from pipeline.sources.huggingface import load_watchlist

    data = tmp_path / "data"
    hub_models = [m for m in load_watchlist(data_dir=data).models if not m.spec]
    assert len(hub_models) >= 10  # enough models for per-model retries to show
    waits: list[float] = []
    with FaultServer() as server:
        server.behaviours[HUB_HOST] = answer(429, b'{"error": "rate limited, come back tomorrow"}',
                                             {"retry-after": "86400", "content-type": "application/json"})
        monkeypatch.setattr("pipeline.assets.raw.hub_client",
                            lambda _replay: loopback_client(server, sleep=waits.append))
        monkeypatch.setattr("pipeline.assets.raw.client_for",
                            lambda _replay, _fail=(), gate=None, step="": loopback_client(server, gate=gate,
                                                                                         sleep=waits.append))
        selection = [ECB_ASSET.key.to_user_string(), asset_name("lambda"), asset_name("runpod"), "raw_hub__models"]
        result = dg.materialize(RAW_ASSETS, resources=resources_for(data), selection=selection,
                                raise_on_error=False)
        hub_hits = [h for h in server.hits if f"//{HUB_HOST}/" in h]
        other_hits = [h for h in server.hits if f"//{HUB_HOST}/" not in h]
    assert result.success
    assert 1 <= len(hub_hits) <= 2, f"{len(hub_hits)} requests to the Hub for {len(hub_models)} models"
    assert not [w for w in waits if w >= 60], waits  # no long pause was taken for the skipped host
    assert any(host_of("lambda") in h for h in other_hits) and any(host_of("runpod") in h for h in other_hits)

    from pipeline.sources.landing import read_log

    log = {e.source: e for e in read_log(data)}
    assert log["lambda"].outcome in ("ok", "partial") and log["runpod"].outcome in ("ok", "partial")
    hub = [e for name, e in log.items() if name.startswith("hub:")]
    assert len(hub) == len(hub_models)
    skipped = [e for e in hub if e.outcome == "network_error"]
    assert len(skipped) >= len(hub_models) - 1
    assert all(f"{HUB_HOST} asked to retry after 86400 s; skipped for this run" in (e.message or "") for e in skipped)

    hub_md = next(e.event_specific_data.materialization.metadata for e in result.get_asset_materialization_events()
                  if e.asset_key.to_user_string() == "raw_hub__models")
    assert hub_md["hosts_skipped"].value == {HUB_HOST: 86400.0}

    # prices are fetched before the Hub step when both are ready (in-process: one step after another)
    starts = [e.step_key for e in result.all_events if e.is_step_start]
    assert starts.index(PRICE_ASSETS[0].node_def.name) < starts.index("raw_hub__models"), starts

    console = Console(record=True, width=250)
    settings = VramlabSettings(data_dir=str(data), db_path=str(data / "vramlab.duckdb")).settings
    summarize(result, None, "test-run", settings, console, 1.0)
    text = console.export_text()
    assert f"host {HUB_HOST} asked to retry after 86400 s: skipped for this run" in text, text
