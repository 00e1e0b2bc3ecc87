"""The replay series: real capture dates per recording, an ordered history of real catalog versions, and an
idempotent backfill through the same assets."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import duckdb
import pytest

from pipeline.ops.replay_backfill import backfill_history
from pipeline.settings import REPLAY_SNAPSHOT_AT
from pipeline.sources.replay import PRICES_MANIFEST, REPLAY_ROOT, ReplayTransport, SeriesError, load_series

SHARED = REPLAY_ROOT.parents[2] / "shared" / "reference" / "prices"


def test_every_recording_carries_a_capture_date_and_says_where_it_comes_from() -> None:
    entries = json.loads(PRICES_MANIFEST.read_text())["responses"]
    for e in entries:
        assert datetime.fromisoformat(e["captured_at"]).tzinfo is not None, e["source"]
        assert e["captured_at_basis"], e["source"]
    by_source = {e["source"]: e for e in entries}
    # dates from shared/reference/prices/NOTES.md ("capture ... dated 2026-10-01", "live capture 2026-07-30")
    assert by_source["scaleway"]["captured_at"].startswith("2026-10-01")
    assert by_source["lambda"]["captured_at"].startswith("2026-07-30")
    assert by_source["ecb"]["captured_at"].startswith("2024-02-27")  # the rates' own date
    # SkyPilot commit dates are unknown: nominal, and the entry says so
    assert by_source["skypilot-lambda"]["captured_at_basis"].startswith("nominal")


def test_replayed_answer_is_stamped_with_the_recordings_capture_time() -> None:
    import httpx

    from pipeline.sources import PRICE_SOURCES

    client = httpx.Client(transport=ReplayTransport())
    answer = client.get(PRICE_SOURCES["lambda"].endpoint)
    assert answer.headers["x-vramlab-observed-at"] == "2026-07-30T12:00:00+00:00"


def test_series_is_ordered_and_its_history_step_serves_the_other_catalog_version() -> None:
    steps = load_series()
    assert [s.id for s in steps][-1] == "current"
    assert [s.as_of for s in steps] == sorted(s.as_of for s in steps)
    assert steps[-1].as_of == REPLAY_SNAPSHOT_AT
    history = steps[0]
    assert history.sources == ["skypilot-jarvislabs", "skypilot-lambda", "skypilot-vast"]
    import httpx

    from pipeline.sources import PRICE_SOURCES

    url = PRICE_SOURCES["skypilot-lambda"].endpoint
    old = httpx.Client(transport=ReplayTransport(step=history.id)).get(url).content
    new = httpx.Client(transport=ReplayTransport()).get(url).content
    # byte for byte the two real catalog versions in shared/reference
    if SHARED.exists():
        assert old == (SHARED / "skypilot_catalog/history/95eaf48/lambda/vms.csv").read_bytes()
        assert new == (SHARED / "skypilot_catalog/v8/lambda/vms.csv").read_bytes()
    assert old != new
    with pytest.raises(SeriesError, match="no replay step"):
        ReplayTransport(step="no-such-step")


def test_backfill_builds_history_through_the_assets_and_is_idempotent(tmp_path) -> None:  # noqa: ANN001
    db = tmp_path / "vramlab.duckdb"
    first = backfill_history(tmp_path, db)
    assert [s.status for s in first] == ["loaded"]
    con = duckdb.connect(str(db))
    rows = con.execute("SELECT count(*) FROM price_observations").fetchall()[0][0]
    # 340 lambda + 63 vast + 19 jarvislabs GPU rows in the history catalogs (history/README.md), one offer each
    # except where a catalog repeats a (type, region) key
    assert 0 < rows <= 340 + 63 + 19
    observed = con.execute("SELECT DISTINCT observed_at FROM price_observations").fetchall()
    assert observed == [(datetime(2026, 11, 21, 12, tzinfo=UTC),)]
    # 8x H100 SXM at lambda in the 95eaf48 catalog: 23.92 $/h (history/README.md), so 2.99 $/GPU-hour
    h100 = con.execute("SELECT min(price_per_gpu_hour_usd) FROM price_observations WHERE provider = 'lambda' "
                       "AND instance_type = 'gpu_8x_h100_sxm5'").fetchall()[0][0]
    assert h100 == pytest.approx(23.92 / 8)
    con.close()
    again = backfill_history(tmp_path, db)
    assert [s.status for s in again] == ["skipped (already loaded)"]
    con = duckdb.connect(str(db))
    assert con.execute("SELECT count(*) FROM price_observations").fetchall()[0][0] == rows
