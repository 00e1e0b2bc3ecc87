"""Every price source fetches and parses its replay fixture through the real fetch code; exact values from the
real recordings, and the unit conversions (cents, 1e-8 units, EUR -> USD at a dated ECB rate)."""

from __future__ import annotations

import pytest

from pipeline.ingest.prices import client_for, latest_rates
from pipeline.sources import CURRENCY_SOURCE, PRICE_SOURCES
from pipeline.sources.base import REFERENCE
from pipeline.sources.landing import load_landed, run_source

ECB_USD_PER_EUR = 1.0856  # eurofxref-daily.xml of 2024-02-27: <Cube currency='USD' rate='1.0856'/>


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> dict:
    data = tmp_path_factory.mktemp("data")
    client = client_for(replay=True)
    run_source(CURRENCY_SOURCE, client, data, replay=True)
    rates = latest_rates(data)
    results = {name: run_source(source, client, data, rates, replay=True) for name, source in PRICE_SOURCES.items()}
    return {"data": data, "rates": rates, "results": results}


def offers(replayed: dict, source: str) -> list:
    entry, result = replayed["results"][source]
    assert entry.outcome == "ok", entry.message
    return result.offers


def one(replayed: dict, source: str, **match):  # type: ignore[no-untyped-def]
    found = [o for o in offers(replayed, source) if all(getattr(o, k) == v for k, v in match.items())]
    assert len(found) == 1, f"{source} {match}: {len(found)} offers"
    return found[0]


def test_at_least_twenty_price_sources() -> None:
    assert len(PRICE_SOURCES) >= 20
    assert sum(name.startswith("skypilot-") for name in PRICE_SOURCES) >= 10


@pytest.mark.parametrize("name", sorted(PRICE_SOURCES))
def test_every_source_parses_its_replay_fixture(replayed: dict, name: str) -> None:
    entry, result = replayed["results"][name]
    assert entry.outcome == "ok", entry.message
    assert entry.offers == len(result.offers) > 0
    raw = load_landed(replayed["data"] / entry.raw_path)  # landed byte for byte; raw_path is relative to data/
    assert raw.sha256 == entry.sha256 and raw.size == entry.bytes
    for offer in result.offers:
        # an offer is observed when fetched; a reference price (a record of the past) at its record's own time
        at_fetch = offer.allocation not in REFERENCE
        assert offer.price_per_hour_usd > 0
        assert offer.observed_at == entry.started_at if at_fetch else offer.observed_at <= entry.started_at


def test_ecb_rates_are_dated(replayed: dict) -> None:
    rates = replayed["rates"]
    assert rates.date == "2024-02-27"
    assert rates.per_usd("EUR") == (1 / ECB_USD_PER_EUR, "2024-02-27")
    assert rates.per_usd("GBP")[0] == pytest.approx(0.85620 / ECB_USD_PER_EUR)


def test_scaleway_h100_sxm_8_eur_to_usd(replayed: dict) -> None:
    o = one(replayed, "scaleway", instance_type="H100-SXM-8-80G")
    assert (o.currency, o.price_per_hour, o.gpu_count, o.gpu_id) == ("EUR", 25.3308, 8, "h100")
    assert o.price_per_gpu_hour == pytest.approx(25.3308 / 8)  # 3.16635 EUR per GPU-hour
    assert o.price_per_hour_usd == pytest.approx(25.3308 * ECB_USD_PER_EUR)  # 27.4991 USD at the 2024-02-27 rate
    assert o.price_per_gpu_hour_usd == pytest.approx(25.3308 * ECB_USD_PER_EUR / 8)
    assert o.fx_date == "2024-02-27" and o.gpu_memory_gb == 80  # 85,899,345,920 bytes per GPU = 80 GiB
    p100 = one(replayed, "scaleway", instance_type="RENDER-S")
    assert p100.gpu_id is None  # P100 is not in the catalog: kept, reported, never guessed
    assert "scaleway: P100 (RENDER-S)" in replayed["results"]["scaleway"][0].unmapped


def test_lambda_cents_per_instance_hour(replayed: dict) -> None:
    a10 = [o for o in offers(replayed, "lambda") if o.instance_type == "gpu_1x_a10"]
    assert {o.region for o in a10} == {"us-east-1", "us-west-1"} and all(o.price_per_hour == 1.29 for o in a10)
    a100x8 = one(replayed, "lambda", instance_type="gpu_8x_a100")
    assert a100x8.unit_scale == "cents" and a100x8.price_per_gpu_hour == pytest.approx(15.92 / 8)
    a6000 = one(replayed, "lambda", instance_type="gpu_1x_a6000")
    assert a6000.region is None and a6000.availability == "no capacity" and a6000.gpu_id == "rtx-a6000"


def test_ovh_prices_in_1e8_units(replayed: dict) -> None:
    h100 = one(replayed, "ovh", instance_type="h100-380")
    assert h100.price_per_hour == 279_000_000 / 1e8 == 2.79 and h100.unit_scale == "1e-8" and h100.currency == "EUR"
    assert h100.price_per_hour_usd == pytest.approx(2.79 * ECB_USD_PER_EUR)
    l40s = one(replayed, "ovh", instance_type="l40s-180")
    assert l40s.gpu_count == 2 and l40s.price_per_gpu_hour == pytest.approx(1.40)


def test_azure_real_rows(replayed: dict) -> None:
    found = offers(replayed, "azure")
    assert len(found) == 2  # Windows and Low Priority rows are dropped, the westeurope row is Windows
    od = one(replayed, "azure", allocation="on_demand")
    assert (od.price_per_hour, od.price_per_gpu_hour, od.region, od.gpu_id) == (98.32, 12.29, "eastus", "h100")
    assert one(replayed, "azure", allocation="spot").price_per_hour == 18.169536


def test_gcp_machine_price_is_composed(replayed: dict) -> None:
    a2 = [o for o in offers(replayed, "gcp") if o.instance_type == "a2-highgpu-1g"]
    assert {o.region for o in a2} == {"us-central1", "us-east1", "us-west1"}
    # 12 vCPU x 0.031611 + 85 GiB x 0.004237 + 1 GPU x 2.933908 (the real SKUs) = 3.673183 $/h
    assert a2[0].price_per_hour == pytest.approx(12 * 0.031611 + 85 * 0.004237 + 2.933908)
    assert a2[0].gpu_id == "a100-40gb"


def test_akash_median_bid_is_not_on_demand(replayed: dict) -> None:
    o = one(replayed, "akash")
    assert (o.allocation, o.price_per_gpu_hour_usd, o.unit, o.gpu_id) == ("bid_statistics", 2.56, "gpu-hour", "h100")
    assert o.availability == "15/68 GPUs free"


def test_vast_marketplace_offer_is_a_whole_gpu(replayed: dict) -> None:
    # Was: fractional because gpu_frac is 0.25. That was wrong: gpu_frac is the offer's share of its
    # machine (1 of the host's 4 GPUs), the offer rents num_gpus = 1 whole RTX 4090.
    o = one(replayed, "vastai", allocation="marketplace")
    assert o.price_per_hour == pytest.approx(0.2466759259259259) and not o.fractional and o.gpu_count == 1
    assert o.gpu_id == "rtx-4090" and o.gpu_memory_gb == pytest.approx(24564 / 1024)


def test_oci_per_gpu_hour_times_count_and_preemptible(replayed: dict) -> None:
    h100 = one(replayed, "oci", instance_type="BM.GPU.H100.8", allocation="on_demand")
    assert h100.unit == "gpu-hour" and h100.price_per_hour == 80 and h100.price_per_gpu_hour == 10
    assert one(replayed, "oci", instance_type="BM.GPU.H100.8", allocation="spot").price_per_hour == 40


def test_verda_string_prices_and_aws_filters(replayed: dict) -> None:
    h100 = one(replayed, "verda", instance_type="1H100.80S.32V", allocation="on_demand")
    assert h100.price_per_hour == 2.29 and one(replayed, "verda", instance_type="1H100.80S.32V",
                                                allocation="spot").price_per_hour == 0.8015
    p5 = [o for o in offers(replayed, "aws") if o.instance_type == "p5.48xlarge"]
    assert len(p5) == 3 and all(o.price_per_hour == 55.04 for o in p5)  # Windows and Reserved rows dropped
    assert one(replayed, "aws", instance_type="p5en.48xlarge", region="us-east-1").gpu_id == "h200"  # override
    assert one(replayed, "aws", instance_type="p4de.24xlarge", region="us-east-1").gpu_id == "a100-80gb-sxm"


def test_runpod_per_gpu_prices_scale_with_count(replayed: dict) -> None:
    o = one(replayed, "runpod", instance_type="8x_H100-SXM_SECURE", allocation="on_demand")
    assert o.unit == "gpu-hour" and o.price_per_hour == pytest.approx(8 * 2.69) and o.price_per_gpu_hour == 2.69


def test_hetzner_dedicated_servers_are_monthly(replayed: dict) -> None:
    # Was: on_demand at 838 / 730 per hour. Wrong: a GEX130 is rented per month (plus setup fee),
    # so it is a "monthly" offer with its monthly price; the hourly figure is only that price / 730.
    o = one(replayed, "hetzner", instance_type="GEX130")
    assert (o.allocation, o.unit, o.price_per_month, o.gpu_id) == ("monthly", "instance-month", 838, "rtx-6000-ada")
    assert o.price_per_hour == pytest.approx(838 / 730)


def test_non_gpu_rows_are_counted_as_ignored_not_rejected(replayed: dict) -> None:
    # aws replay, per region (3 files): the p5.48xlarge Windows and Reserved rows are other terms (m7i.large never
    # lands: the streaming fetch keeps GPU-family lines only). digitalocean: s-1vcpu-1gb is a CPU droplet.
    aws, _ = replayed["results"]["aws"]
    assert aws.ignored == {"other terms, OS, tenancy or software": 2 * 3} and aws.rejected == 0
    do, _ = replayed["results"]["digitalocean"]
    assert do.ignored == {"not a GPU offer": 1} and do.rejected == 0
