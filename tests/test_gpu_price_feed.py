"""The gpu-price-feed source: the bundled cuts of toolshedlabs-hash/gpu-price-feed's data/history/v2 files parse into
reference prices stamped with each line's own collected_at, GPU keys map by the GPU map's rules (a form the key does
not state stays unknown), and reference prices stay out of current offers while counting in the history.

Expected values are read by hand from the bundled files (pipeline/replay/prices/gpu-price-feed/), cited by line."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.quality.offers import BAND_HIGH, BAND_LOW, MIN_REFERENCE_PROVIDERS, rebuild_offer_quality
from pipeline.sources.base import ParseError
from pipeline.sources.drift import shape_of
from pipeline.sources.gpu_price_feed import URL, GpuPriceFeed, months
from pipeline.sources.payload import RawPart, RawPayload
from pipeline.storage.db import connect
from pipeline.storage.loaders import load_observations, rebuild_current
from pipeline.storage.reference_prices import judge_reference_prices

BUNDLE = Path(__file__).resolve().parent.parent / "pipeline" / "replay" / "prices" / "gpu-price-feed"
MONTHS = ("2026-07", "2026-08", "2026-09", "2026-10")


def payload(*bodies: tuple[str, bytes, int]) -> RawPayload:
    parts = tuple(RawPart(url=URL.format(month=m), status=status, body=body) for m, body, status in bodies)
    return RawPayload(source="gpu-price-feed", fetched_at=datetime(2026, 12, 1, tzinfo=UTC), parts=parts)


@pytest.fixture(scope="module")
def bundle() -> list:
    result = GpuPriceFeed().parse(payload(*((m, (BUNDLE / f"{m}.jsonl").read_bytes(), 200) for m in MONTHS)))
    assert not result.rejected and not result.unmapped
    return result.offers


def find(offers: list, at: str, provider: str, name: str):  # type: ignore[no-untyped-def]
    found = [o for o in offers if o.observed_at == datetime.fromisoformat(at) and o.provider == provider
             and o.gpu_name == name]
    assert len(found) == 1, (at, provider, name, len(found))
    return found[0]


def test_each_price_is_observed_at_its_own_line_for_the_provider_it_names(bundle: list) -> None:
    # 2026-08.jsonl line 2 (collected_at 2026-08-02T11:07:39+00:00): "digitalocean": {"H100 80GB SXM": 4.41, ...};
    # line 1 (2026-08-01) said 3.39
    moved = find(bundle, "2026-08-02T11:07:39+00:00", "digitalocean", "H100 80GB SXM")
    before = find(bundle, "2026-08-01T11:11:58+00:00", "digitalocean", "H100 80GB SXM")
    assert (before.price_per_gpu_hour_usd, moved.price_per_gpu_hour_usd) == (3.39, 4.41)
    assert (moved.gpu_id, moved.form_factor, moved.gpu_count, moved.allocation) == ("h100", "SXM", 1,
                                                                                     "reference_on_demand")
    # the feed's provider names are vramlab's ids: lambdalabs is Lambda, datacrunch is Verda (same line)
    assert find(bundle, "2026-08-02T11:07:39+00:00", "lambda", "H100 80GB PCIe").gpu_id == "h100-pcie"
    assert find(bundle, "2026-08-02T11:07:39+00:00", "verda", "H100 80GB SXM").price_per_gpu_hour_usd == 3.25
    # 2026-07.jsonl line 1 (2026-07-23T22:12:57): runpod "H100 94GB NVL": 2.59, "RTX 4090 24GB": 0.34
    assert find(bundle, "2026-07-23T22:12:57+00:00", "runpod", "H100 94GB NVL").gpu_id == "h100-nvl"
    assert find(bundle, "2026-07-23T22:12:57+00:00", "runpod", "RTX 4090 24GB").price_per_gpu_hour_usd == 0.34
    lines = sum(len((BUNDLE / f"{m}.jsonl").read_text().splitlines()) for m in MONTHS)
    assert len({o.observed_at for o in bundle}) == lines == 4 + 23 + 16 + 4


def test_a_form_the_key_does_not_state_is_never_guessed(bundle: list) -> None:
    # 2026-08.jsonl line 1: "vastai": {"H200 141GB (form unstated)": 3.9357, "H100 80GB SXM": 1.7356, ...}
    unstated = find(bundle, "2026-08-01T11:11:58+00:00", "vast", "H200 141GB (form unstated)")
    assert (unstated.gpu_id, unstated.form_factor, unstated.price_per_gpu_hour_usd) == ("h200", "unknown", 3.9357)
    sxm = find(bundle, "2026-08-01T11:11:58+00:00", "runpod", "H200 141GB SXM")
    assert (sxm.gpu_id, sxm.form_factor) == ("h200", "SXM")
    # Vast is a marketplace (host-set prices): its records extend the marketplace history, not the on-demand one
    assert unstated.allocation == "reference_marketplace"
    line = {"schema_version": 2, "collected_at": "2026-11-02T06:15:00+00:00",
            "cheapest": {"runpod": {"H100 80GB (form unstated)": 2.5, "H100 64GB NVL": 2.1}}}
    got = GpuPriceFeed().parse(payload(("2026-11", json.dumps(line).encode(), 200))).offers
    by_name = {o.gpu_name: o for o in got}
    assert (by_name["H100 80GB (form unstated)"].gpu_id, by_name["H100 80GB (form unstated)"].form_factor) == \
        ("h100", "unknown")
    assert by_name["H100 64GB NVL"].gpu_id is None  # no H100 has 64 GB: unmapped and reported, never a guess


def test_schema_1_lines_are_refused_and_unpublished_months_hold_nothing() -> None:
    old = {"collected_at": "2026-07-01T06:15:00+00:00", "cheapest": {"runpod": {"H100 80GB": 1.99}}}
    with pytest.raises(ParseError, match="schema_version"):
        GpuPriceFeed().parse(payload(("2026-07", json.dumps(old).encode(), 200)))
    assert GpuPriceFeed().parse(payload(("2026-12", b'{"error": "404: Not Found"}', 404))).offers == []
    assert months(datetime(2026, 12, 4, tzinfo=UTC)) == ["2026-07", "2026-08", "2026-09", "2026-10", "2026-11",
                                                         "2026-12"]
    assert months(datetime(2027, 1, 1, tzinfo=UTC))[-2:] == ["2026-12", "2027-01"]


def test_a_month_file_has_the_same_shape_with_one_line_or_many() -> None:
    """The drift canary's shape of the feed (live): a month's file starts with one line (a JSON object) and grows by
    a line a day (JSON Lines): the same keys, so a new month is no unknown shape."""
    month = (BUNDLE / "2026-08.jsonl").read_bytes()
    first = month.splitlines()[0]
    assert shape_of(payload(("2026-08", month, 200))) == shape_of(payload(("2026-08", first, 200))) == [
        "cheapest", "collected_at", "schema_version"]


def test_reference_prices_are_history_only(tmp_path: Path, bundle: list) -> None:
    con = connect(tmp_path / "db.duckdb")
    # 2026-07.jsonl lines 1 and 2 are two runs in one hour (22:12 and 22:17): of line 2's 20 prices only Vast's
    # H100 NVL (absent from line 1) is new, and an unchanged price within the hour adds no row
    assert load_observations(con, [(o, "sha") for o in bundle]) == len(bundle) - 19
    rebuild_current(con, datetime(2026, 11, 28, tzinfo=UTC))
    assert con.execute("SELECT count(*) FROM offers_current").fetchall()[0][0] == 0  # never a current offer
    assert con.execute("SELECT count(*) FROM price_changes").fetchall()[0][0] == 0
    rebuild_offer_quality(con, datetime(2026, 11, 28, tzinfo=UTC))  # the stage both graphs run after loading
    judged = dict(con.execute("""SELECT eligible, count(*) FROM price_observations GROUP BY 1""").fetchall())
    assert None not in judged and judged[True] > 0
    # 2026-09.jsonl line 10 (2026-09-10): vastai "H100 80GB SXM": 5.7156 (a marketplace quote) and runpod's 2.69
    # are both kept for the history
    rows = dict(con.execute("""SELECT provider, eligible FROM price_observations WHERE gpu_name = 'H100 80GB SXM'
                               AND observed_at = '2026-09-10 11:18:43+00'""").fetchall())
    assert rows["vast"] is True and rows["runpod"] is True


def test_an_on_demand_record_far_below_the_days_records_is_quarantined(tmp_path: Path) -> None:
    line = {"schema_version": 2, "collected_at": "2026-11-02T06:15:00+00:00", "cheapest": {
        "runpod": {"H100 80GB SXM": 2.69}, "lambdalabs": {"H100 80GB SXM": 3.99},
        "datacrunch": {"H100 80GB SXM": 3.25}, "scaleway": {"H100 80GB SXM": 0.38}}}
    # the day's median of the four providers is (2.69 + 3.25) / 2 = 2.97; 0.38 is below 2.97 / 3 = 0.99
    offers = GpuPriceFeed().parse(payload(("2026-11", json.dumps(line).encode(), 200))).offers
    con = connect(tmp_path / "db.duckdb")
    load_observations(con, [(o, "sha") for o in offers])
    assert judge_reference_prices(con, band_low=BAND_LOW, band_high=BAND_HIGH,
                                  min_providers=MIN_REFERENCE_PROVIDERS) == 4
    got = {p: (e, q, r) for p, e, q, r in con.execute(
        "SELECT provider, eligible, quarantined, quality_reasons FROM price_observations").fetchall()}
    assert got["scaleway"] == (False, True, ["below_band"])
    assert got["runpod"] == (True, False, [])
    assert judge_reference_prices(con, band_low=BAND_LOW, band_high=BAND_HIGH,
                                  min_providers=MIN_REFERENCE_PROVIDERS) == 0  # judged once
