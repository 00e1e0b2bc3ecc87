"""The offer-quality stage on a real DuckDB file: every rule with a hand-derived expectation.

The rows copy the shapes of the defects found in the replay snapshot (a 0.138 $/h V100 on Verda, the
aggregator's RunPod L40S rows with spot at 2x on-demand, Mithril's 1.00 $/GPU-h on-demand == spot rows, Lium
marketplace rows labelled on-demand, Hetzner's monthly servers divided by 730, Oracle as both ``oci`` and
``oracle``). Before the stage existed all of them reached the cheapest setups.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pipeline.compute.setups import eligible_offers
from pipeline.quality.offers import BAND_LOW, rebuild_offer_quality
from pipeline.storage.db import connect

NOW = datetime(2026, 11, 28, 12, tzinfo=UTC)
COLUMNS = ["offer_key", "source", "provider", "instance_type", "region", "zone", "gpu_name", "gpu_id", "gpu_count",
           "fractional", "gpu_memory_gb", "vcpus", "ram_gb", "currency", "price_per_hour", "price_per_gpu_hour",
           "price_per_hour_usd", "price_per_gpu_hour_usd", "unit", "fx_date", "allocation", "availability",
           "first_seen", "last_seen", "verified_at", "removed", "stale", "previous_price_usd", "jump_unconfirmed"]


def add(con, source: str, provider: str, instance: str, gpu: str, per_gpu: float, *, count: int = 1,
        region: str | None = "r1", allocation: str = "on_demand", verified: datetime = NOW) -> str:  # type: ignore[no-untyped-def]
    key = f"{source}|{instance}|{region or ''}||{allocation}"
    row = dict(offer_key=key, source=source, provider=provider, instance_type=instance, region=region, zone=None,
               gpu_name=gpu, gpu_id=gpu, gpu_count=count, fractional=False, gpu_memory_gb=None, vcpus=None,
               ram_gb=None, currency="USD", price_per_hour=per_gpu * count, price_per_gpu_hour=per_gpu,
               price_per_hour_usd=per_gpu * count, price_per_gpu_hour_usd=per_gpu, unit="instance-hour",
               fx_date=None, allocation=allocation, availability=None, first_seen=verified, last_seen=verified,
               verified_at=verified, removed=False, stale=False, previous_price_usd=None, jump_unconfirmed=False)
    con.execute(f"INSERT INTO offers_current ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})",
                [row[c] for c in COLUMNS])
    return key


@pytest.fixture
def con(tmp_path: Path):  # type: ignore[no-untyped-def]
    c = connect(tmp_path / "q.duckdb")
    yield c
    c.close()


def quality(con, key: str) -> dict:  # type: ignore[no-untyped-def]
    cur = con.execute("SELECT q.*, j.eligible FROM offer_quality q JOIN offers_judged j USING (offer_key) "
                      "WHERE offer_key = ?", [key])  # eligible: the view's (sql/020), the one definition
    return dict(zip([d[0] for d in cur.description], cur.fetchall()[0], strict=True))


def test_reference_is_the_median_of_providers_with_zone_copies_collapsed(con) -> None:  # type: ignore[no-untyped-def]
    verda = add(con, "skypilot-verda", "verda", "1V100.6V", "v100", 0.138)
    for zone in range(5):  # one provider's price copied into five regions counts once
        add(con, "skypilot-lambda", "lambda", "gpu_8x_v100", "v100", 0.79, count=8, region=f"z{zone}")
    add(con, "skypilot-shadeform", "shadeform", "paperspace_V100", "v100", 2.34)
    add(con, "skypilot-oci", "oci", "VM.GPU3.1", "v100", 2.95)
    rebuild_offer_quality(con, NOW)
    # per-provider medians 0.138, 0.79, 2.34, 2.95 -> median (0.79 + 2.34) / 2 = 1.565; a row-level median over
    # the 8 rows would be 0.79 (five copies of it) and would let a 0.26 $/h V100 through
    ref = con.execute("SELECT providers, offers, median_gpu_hour_usd, band_low_usd FROM gpu_price_reference "
                      "WHERE gpu_id = 'v100'").fetchall()[0]
    assert ref[0] == 4 and ref[1] == 8
    assert math.isclose(ref[2], 1.565) and math.isclose(ref[3], 1.565 / BAND_LOW)
    row = quality(con, verda)
    assert math.isclose(row["ratio_to_reference"], 0.138 / 1.565)  # 0.088: 11x below the reference
    assert row["below_band"] and row["quarantined"] and row["reasons"] == ["below_band"] and not row["eligible"]
    # Lambda's 0.79 is 0.50x the reference: inside the band (> 1/3), kept
    assert con.execute("SELECT bool_and(eligible) FROM offers_judged WHERE source = 'skypilot-lambda'"
                       ).fetchall()[0][0]


def test_thin_reference_judges_no_one(con) -> None:  # type: ignore[no-untyped-def]
    a = add(con, "a", "a", "x", "l4", 0.05)
    add(con, "b", "b", "y", "l4", 0.80)
    rebuild_offer_quality(con, NOW)
    assert con.execute("SELECT band_low_usd FROM gpu_price_reference").fetchall() == [(None,)]  # 2 < 3 providers
    assert quality(con, a)["eligible"]


def test_swapped_spot_and_on_demand_columns_quarantine_both_rows(con) -> None:  # type: ignore[no-untyped-def]
    od = add(con, "skypilot-runpod", "runpod", "1x_L40S_SECURE", "l40s", 0.43, region="CA")
    spot = add(con, "skypilot-runpod", "runpod", "1x_L40S_SECURE", "l40s", 0.86, region="CA", allocation="spot")
    other_region = add(con, "skypilot-runpod", "runpod", "1x_L40S_SECURE", "l40s", 0.86, region="US",
                       allocation="spot")  # no on-demand row of its own in US: nothing to compare, kept
    rebuild_offer_quality(con, NOW)
    for key, own in ((od, ("own_spot_gpu_hour_usd", 0.86)), (spot, ("own_on_demand_gpu_hour_usd", 0.43))):
        row = quality(con, key)
        assert row["spot_reversed"] and row["quarantined"] and not row["eligible"]
        assert row[own[0]] == own[1]
    assert quality(con, other_region)["eligible"]


def test_on_demand_equal_to_spot_is_a_placeholder(con) -> None:  # type: ignore[no-untyped-def]
    od = add(con, "skypilot-mithril", "mithril", "h100-80gb.sxm.8x", "h100", 1.0, count=8)
    add(con, "skypilot-mithril", "mithril", "h100-80gb.sxm.8x", "h100", 1.0, count=8, allocation="spot")
    honest = add(con, "verda", "verda", "1H100.80S.32V", "h100", 2.29)
    add(con, "verda", "verda", "1H100.80S.32V", "h100", 0.801, allocation="spot")
    rebuild_offer_quality(con, NOW)
    row = quality(con, od)
    assert row["placeholder"] and row["quarantined"] and row["reasons"] == ["placeholder"]
    assert quality(con, honest)["eligible"] and not quality(con, honest)["placeholder"]


def test_allocation_classes_marketplace_and_monthly(con) -> None:  # type: ignore[no-untyped-def]
    lium = add(con, "skypilot-lium", "lium", "RTX3090_8x", "rtx-3090", 0.16, count=8)
    hetzner = add(con, "hetzner", "hetzner", "GEX44", "rtx-4000-ada", 0.27363, region=None)
    vast = add(con, "skypilot-vast", "vast", "1x-RTX_4090", "rtx-4090", 0.3, allocation="marketplace_median")
    rebuild_offer_quality(con, NOW)
    assert quality(con, lium)["allocation_class"] == "marketplace" and quality(con, lium)["allocation"] == "on_demand"
    assert quality(con, vast)["allocation_class"] == "marketplace"
    row = quality(con, hetzner)
    assert row["allocation_class"] == "monthly" and not row["eligible"]  # never shown as hourly
    assert math.isclose(row["price_per_month_usd"], 0.27363 * 730)  # 199.75: the monthly price as billed
    # the setups' reader sees the class, so the on-demand list can never pick them
    assert {o["offer_key"]: o["allocation"] for o in eligible_offers(con)} == {lium: "marketplace",
                                                                               vast: "marketplace"}


def test_one_oracle_and_a_direct_api_wins_over_the_aggregator(con) -> None:  # type: ignore[no-untyped-def]
    direct = add(con, "oci", "oracle", "BM.GPU.H100.8", "h100", 10.0, count=8, region=None)
    copies = [add(con, "skypilot-oci", "oci", "BM.GPU.H100.8", "h100", 10.0, count=8, region=r)
              for r in ("af-casablanca-1", "us-ashburn-1")]
    own = add(con, "skypilot-oci", "oci", "BM.GPU.A10.4", "a10", 2.0, count=4)  # not in the direct payload: kept
    rp_direct = add(con, "runpod", "runpod", "1x_H100-SXM_SECURE", "h100", 2.69, region="US")
    rp_copy = add(con, "skypilot-runpod", "runpod", "1x_H100-SXM_SECURE", "h100", 2.99, region="US")
    counts = rebuild_offer_quality(con, NOW)
    assert {quality(con, k)["canonical_provider"] for k in (direct, *copies, own)} == {"oci"}
    assert [quality(con, k)["duplicate_of"] for k in copies] == [direct, direct]
    assert quality(con, direct)["duplicate_of"] is None and quality(con, own)["duplicate_of"] is None
    assert quality(con, rp_copy)["duplicate_of"] == rp_direct  # same region, direct wins though dearer
    assert counts["duplicates"] == 3
    assert con.execute("SELECT count(*) FROM offer_quality").fetchall()[0][0] == 6  # losers kept as evidence
    assert {o["offer_key"] for o in eligible_offers(con)} == {direct, own, rp_direct}


def test_a_second_source_confirms_a_band_outlier(con) -> None:  # type: ignore[no-untyped-def]
    for name, price in (("a", 3.0), ("b", 3.2), ("c", 2.8)):
        add(con, name, name, "h", "h200", price)
    low = add(con, "skypilot-x", "x", "cheap", "h200", 0.9)  # 0.9 / 3.0 = 0.3 < 1/3
    rebuild_offer_quality(con, NOW)
    assert quality(con, low)["quarantined"]
    add(con, "x-direct", "x", "cheap-direct", "h200", 0.95)  # within 15 % of 0.9 from another source
    rebuild_offer_quality(con, NOW)
    row = quality(con, low)
    assert row["below_band"] and row["confirmed_by"] == "second_source" and not row["quarantined"] and row["eligible"]


def test_a_band_outlier_held_for_a_week_is_confirmed_by_its_observations(con) -> None:  # type: ignore[no-untyped-def]
    for name, price in (("a", 3.0), ("b", 3.2), ("c", 2.8)):
        add(con, name, name, "h", "h200", price)
    low = add(con, "y", "y", "cheap", "h200", 0.9)
    far = add(con, "z", "z", "cheaper", "h200", 0.2)  # 15x below: time never confirms it
    for key, price in ((low, 0.9), (far, 0.2)):
        for day in (0, 4, 8):
            at = NOW - timedelta(days=day)
            con.execute("INSERT INTO price_observations (offer_key, observed_hour, observed_at, source, provider, "
                        "instance_type, gpu_name, gpu_count, fractional, currency, price_per_hour, "
                        "price_per_gpu_hour, price_per_hour_usd, price_per_gpu_hour_usd, unit, unit_scale, fx_rate, "
                        "allocation, mapping_version) VALUES (?, ?, ?, 's', 'p', 'i', 'g', 1, false, 'USD', ?, ?, ?, "
                        "?, 'instance-hour', '1', 1, 'on_demand', 'v')", [key, at, at, price, price, price, price])
    rebuild_offer_quality(con, NOW)
    assert quality(con, low)["confirmed_by"] == "observations" and not quality(con, low)["quarantined"]
    assert quality(con, far)["quarantined"] and quality(con, far)["confirmed_by"] is None


def test_every_quarantined_offer_has_a_reason(con) -> None:  # type: ignore[no-untyped-def]
    for name, price in (("a", 3.0), ("b", 3.2), ("c", 2.8), ("d", 30.0), ("e", 0.3)):
        add(con, name, name, "h", "h200", price)
    counts = rebuild_offer_quality(con, NOW)
    # median 3.0: 30.0 is 10x above (> 5x), 0.3 is 10x below (< 1/3)
    assert counts["per_reason"] == {"below_band": 1, "above_band": 1, "spot_reversed": 0, "placeholder": 0}
    assert counts["quarantined_without_reason"] == 0
    assert con.execute("SELECT bool_and(len(reasons) > 0) FROM offer_quality WHERE quarantined").fetchall()[0][0]
