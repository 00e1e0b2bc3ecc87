"""Parsers on what providers really send: one test per defect class, on the fixtures of
``tests/fixtures/prices/`` (provenance and genuine/constructed status in ``tests/fixtures/README.md``).

Each test failed on the parsers before its fix (the reason is named in its docstring) and passes now. Expected
values are read off the fixture by hand; the arithmetic is in the test.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import httpx
import pytest

from pipeline.sources import PRICE_SOURCES
from pipeline.sources.base import RawPart, RawPayload
from pipeline.sources.fx import FxRates
from pipeline.sources.gpu_names import memory_fits, resolve
from pipeline.sources.skypilot import per_gpu_memory_gb
from pipeline.sources.vastai import GPU_NAMES

FIXTURES = Path(__file__).parent / "fixtures" / "prices"
SHARED_SCALEWAY = FIXTURES / "scaleway.servers.json"
AT = datetime(2026, 12, 1, tzinfo=UTC)


def payload(source: str, *files: str, urls: tuple[str, ...] = ()) -> RawPayload:
    parts = tuple(RawPart(url=urls[i] if i < len(urls) else f"https://example.test/{name}", status=200,
                          body=(FIXTURES / name).read_bytes()) for i, name in enumerate(files))
    return RawPayload(source=source, fetched_at=AT, parts=parts)


def parse(source: str, *files: str, urls: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    return PRICE_SOURCES[source].parse(payload(source, *files, urls=urls))


def by(offers, **match):  # type: ignore[no-untyped-def]
    return [o for o in offers if all(getattr(o, k) == v for k, v in match.items())]


# --- AWS -------------------------------------------------------------------------------------------------------

def test_aws_no_preinstalled_software_is_the_literal_NA() -> None:
    """Before: only an EMPTY "Pre Installed S/W" was accepted; the real file writes ``NA`` -> 0 AWS offers."""
    result = parse("aws", "aws.index.excerpt.csv")
    p5 = by(result.offers, instance_type="p5.48xlarge")
    assert len(p5) == 1  # Linux/Shared/NA/Used/OnDemand only: Windows, "SQL Web" and CapacityBlock rows are not it
    assert (p5[0].price_per_hour, p5[0].gpu_count, p5[0].gpu_id) == (55.04, 8, "h100")
    assert p5[0].gpu_memory_gb == 640 / 8  # "GPU Memory" is the instance's total
    assert by(result.offers, instance_type="g6e.xlarge")[0].gpu_id == "l40s"
    # the 2 genuine c6i rows are not GPU offers; 5 GPU rows are other terms (Windows, SQL Web, CapacityBlock, an
    # unused capacity reservation, Dedicated Host tenancy) - counted, never rejected
    assert result.ignored == {"not a GPU offer": 2, "other terms, OS, tenancy or software": 5}
    assert result.rejected == []


def test_aws_g6f_is_a_slice_of_an_l4() -> None:
    """g6f.large lists "GPU" 1 and "GPU Memory" 3 GB: an eighth of a 24 GB L4, not a whole L4 with 3 GB (before:
    a 3 GB "L4" whole GPU at 0.206 $/GPU-h)."""
    g6f = by(parse("aws", "aws.index.excerpt.csv").offers, instance_type="g6f.large")[0]
    assert g6f.fractional and g6f.gpu_share == pytest.approx(3 / 24) and g6f.gpu_id == "l4"
    assert g6f.price_per_gpu_hour == pytest.approx(0.206 * 8)  # the whole-card equivalent


# --- Lambda ----------------------------------------------------------------------------------------------------

def test_lambda_cpu_only_types_are_ignored_not_fatal() -> None:
    """Before: ``cpu_4x_general`` raised ParseError ("does not follow gpu_<n>x_<gpu>") and lost every offer."""
    result = parse("lambda", "lambda.instance-types.json")
    assert not by(result.offers, instance_type="cpu_4x_general")
    assert result.ignored == {"not a GPU offer": 1}
    a100 = by(result.offers, instance_type="gpu_8x_a100_80gb_sxm4")[0]
    # 1432 cents for 8 GPUs; "A100 (80 GB SXM4)" is per GPU
    assert (a100.price_per_hour, a100.gpu_memory_gb, a100.gpu_id) == (14.32, 80, "a100-80gb-sxm")
    assert len(by(result.offers, instance_type="gpu_1x_a10")) == 2  # real rows still parse (2 regions)


# --- Vultr -----------------------------------------------------------------------------------------------------

def vultr():  # type: ignore[no-untyped-def]
    return parse("vultr", "vultr.plans.json", "vultr.plans-metal.json")


def test_vultr_cpu_plans_with_gpu_brand_none_are_ignored() -> None:
    """Before: ``gpu_brand: "none"`` is truthy, so every CPU plan was "rejected" as a GPU plan without facts."""
    result = vultr()
    assert result.rejected == []
    assert not by(result.offers, instance_type="vc2-2c-4gb") and not by(result.offers, instance_type="vbm-4c-32gb")
    # vc2-2c-4gb and vbm-4c-32gb are CPU plans; the MI325X plan has no location (deployable nowhere)
    assert result.ignored["not a GPU offer"] == 2 and result.ignored_total == 3


def test_vultr_vm_plans_are_slices_of_the_parent_card() -> None:
    """Before: a slice without ``gpu_count`` was 1 whole GPU with its slice memory: 4 GB and 40 GB of an A100 80GB
    became "A100 40GB"-like whole GPUs; "1/2" and "1" (strings) were not read the same way."""
    offers = vultr().offers
    tiny = by(offers, instance_type="vcg-a100-1c-6g-4vram")[0]  # no gpu_count: 4 GB of an 80 GB card = 1/20
    assert tiny.fractional and tiny.gpu_share == pytest.approx(4 / 80) and tiny.gpu_count == pytest.approx(0.05)
    assert (tiny.gpu_memory_gb, tiny.parent_gpu_memory_gb, tiny.gpu_id) == (4, 80, "a100-80gb-pcie")
    assert tiny.price_per_gpu_hour == pytest.approx(0.123 / 0.05)  # the whole-card equivalent: 2.46 $/h
    half = by(offers, instance_type="vcg-a100-6c-60g-40vram")[0]  # gpu_count "1/2", 40 GB: half an A100 80GB
    assert half.gpu_share == 0.5 and half.gpu_id == "a100-80gb-pcie" and half.gpu_memory_gb == 40
    whole = by(offers, instance_type="vcg-a100-12c-120g-80vram")[0]  # 80 GB / 80 GB card = 1 whole GPU
    assert not whole.fractional and whole.gpu_count == 1 and whole.gpu_memory_gb == 80
    l40s = by(offers, instance_type="vcg-l40s-16c-180g-48vram")[0]  # gpu_count "1" (a string)
    assert (l40s.gpu_count, l40s.gpu_memory_gb, l40s.gpu_id) == (1, 48, "l40s")


def test_vultr_bare_metal_gpu_machines_are_collected() -> None:
    """Before: ``/v2/plans-metal`` ids like vbm-112c-2048gb-8-h100-gpu carry no GPU fields: rejected."""
    offers = vultr().offers
    h100 = by(offers, instance_type="vbm-112c-2048gb-8-h100-gpu")
    assert {(o.allocation, o.price_per_hour) for o in h100} == {("on_demand", 23.92)}  # no deploy_preemptible
    assert h100[0].gpu_count == 8 and h100[0].gpu_id == "h100" and h100[0].price_per_gpu_hour == 23.92 / 8
    assert by(offers, instance_type="vbm-256c-2048gb-8-mi300x-gpu")[0].gpu_id == "mi300x"
    a40 = by(offers, instance_type="vcg-a40-24c-120g-48vram")[0]  # vdm plan in /v2/plans, no GPU fields
    assert (a40.gpu_id, a40.gpu_count, a40.region, a40.gpu_memory_gb) == ("a40", 1, "blr", 48)


def test_vultr_bare_metal_a100_is_the_80gb_card() -> None:
    """A bare-metal id names the GPU only ("...-8-a100-gpu"): without a memory figure "A100" meant the 40 GB part."""
    plan = {"id": "vbm-64c-2048gb-8-a100-gpu", "cpu_threads": 128, "ram": 2097152, "hourly_cost": 12.9,
            "type": "NVMe", "locations": ["ewr"]}
    body = json.dumps({"plans_metal": [plan], "meta": {"links": {"next": ""}}}).encode()
    raw = RawPayload(source="vultr", fetched_at=AT, parts=(RawPart(url="https://x/plans-metal", status=200, body=body),))
    [offer] = PRICE_SOURCES["vultr"].parse(raw).offers
    assert (offer.gpu_count, offer.gpu_memory_gb, offer.gpu_id) == (8, 80, "a100-80gb-sxm")


# --- Scaleway --------------------------------------------------------------------------------------------------

def test_scaleway_reads_every_page() -> None:
    """Before: one request per zone with ``per_page=100``; the catalog has ~136 types, page 2 was never read."""
    real = json.loads(SHARED_SCALEWAY.read_text())["servers"]
    filler = {f"PLAY2-{i}": real["DEV1-S"] for i in range(100 - 7)}  # constructed CPU types to fill page 1
    page1 = dict(list(real.items())[:7]) | filler
    page2 = dict(list(real.items())[7:]) | {"H100-SXM-8-80G-P2": real["H100-SXM-8-80G"]}
    assert len(page1) == 100
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        if "/fr-par-2/" not in request.url.path:
            return httpx.Response(404, json={"message": "zone not found"})
        page = parse_qs(urlsplit(str(request.url)).query).get("page", ["1"])[0]
        return httpx.Response(200, json={"servers": {"1": page1, "2": page2}.get(page, {})})

    source = PRICE_SOURCES["scaleway"]
    with httpx.Client(transport=httpx.MockTransport(answer)) as client:
        raw = source.fetch(client)
    assert [u for u in seen if "fr-par-2" in u][-1].endswith("page=2")
    result = source.parse(raw, FxRates(date="2024-02-27", per_eur={"EUR": 1.0, "USD": 1.0856}))
    assert result.rejected == []
    assert by(result.offers, instance_type="H100-SXM-8-80G-P2")  # only on page 2
    assert result.ignored["not a GPU offer"] == 93 + 1  # the 93 fillers and DEV1-S


# --- Vast ------------------------------------------------------------------------------------------------------

def test_vast_gpu_frac_is_the_share_of_the_machine() -> None:
    """Before: ``gpu_frac`` 0.25 marked a whole RTX 4090 (1 of the host's 4) as a fractional GPU."""
    result = parse("vastai", "vast.offers.wrapped.json")
    o = by(result.offers, allocation="marketplace")[0]
    assert (o.gpu_count, o.fractional, o.gpu_id) == (1, False, "rtx-4090")
    assert o.gpu_memory_gb == pytest.approx(24564 / 1024)  # gpu_ram: MiB per GPU


def test_vast_queries_cover_the_market_without_a_verified_filter() -> None:
    """Before: one query with ``verified: true``: only the cheapest few dozen verified offers of the market."""
    queries: list[dict] = []

    def answer(request: httpx.Request) -> httpx.Response:
        q = json.loads(unquote(parse_qs(urlsplit(str(request.url)).query)["q"][0]))
        queries.append(q)
        offer = json.loads((FIXTURES / "vast.offers.wrapped.json").read_text())["offers"][0]
        return httpx.Response(200, json={"offers": [offer]})  # the same offer answers every query

    source = PRICE_SOURCES["vastai"]
    with httpx.Client(transport=httpx.MockTransport(answer)) as client:
        raw = source.fetch(client)
    assert all("verified" not in q for q in queries)
    assert {q.get("gpu_name", {}).get("eq") for q in queries} == {None, *GPU_NAMES}
    assert len(source.parse(raw).offers) == 2  # one offer id, kept once: marketplace + its min_bid spot


# --- GCP -------------------------------------------------------------------------------------------------------

def test_gcp_spot_gpu_skus_attached_to_spot_preemptible_vms() -> None:
    """Before: the regex wanted "... GPU running in"; spot GPU SKUs say "... GPU attached to Spot Preemptible VMs
    running in", so GCP had no spot GPU prices."""
    offers = parse("gcp", "gcp.skus.with-spot.json").offers
    spot = by(offers, instance_type="a2-highgpu-1g", allocation="spot", region="us-central1")
    assert len(spot) == 1
    # a2-highgpu-1g = 12 vCPU x 0.010537 + 85 GiB x 0.001412333 + 1 x 0.977969333 (the fixture's spot SKUs)
    assert spot[0].price_per_hour == pytest.approx(12 * 0.010537 + 85 * 0.001412333 + 0.977969333)
    on_demand = by(offers, instance_type="a2-highgpu-1g", allocation="on_demand", region="us-central1")[0]
    assert on_demand.price_per_hour == pytest.approx(12 * 0.031611 + 85 * 0.004237 + 2.933908)


# --- per-GPU memory --------------------------------------------------------------------------------------------

def test_verda_gpu_memory_is_the_machine_total() -> None:
    """Before: 96 GB of a 2x RTX A6000 was stored as 96 GB per GPU (only totals over 200 were divided)."""
    result = parse("verda", "verda.instance-types.json")
    a6000 = by(result.offers, instance_type="2A6000.20V", allocation="on_demand")[0]
    assert (a6000.gpu_memory_gb, a6000.gpu_id, a6000.price_per_hour) == (96 / 2, "rtx-a6000", 1.98)
    assert by(result.offers, instance_type="1V100.6V")[0].gpu_id == "v100"
    assert result.ignored == {"not a GPU offer": 1}  # CPU.120V.480G


def test_digitalocean_vram_is_the_droplet_total() -> None:
    """Before: ``vram.amount`` 640 of gpu-h100x8-640gb was stored as 640 GB per H100."""
    result = parse("digitalocean", "digitalocean.sizes.json")
    h100 = by(result.offers, instance_type="gpu-h100x8-640gb")[0]
    assert (h100.gpu_memory_gb, h100.gpu_id, h100.price_per_gpu_hour) == (80, "h100", 23.92 / 8)
    assert by(result.offers, instance_type="gpu-mi300x8-1536gb")[0].gpu_memory_gb == 1536 / 8
    assert result.ignored == {"not a GPU offer": 1}


@pytest.mark.parametrize(("cloud", "name", "count", "gpu_info", "expected"), [
    # Vast: SizeInMiB is the machine total: 2x A100 40GB = 81920 MiB (before: 80 GB "per GPU" -> A100 80GB)
    ("vast", "A100", 2, "{'Gpus': [{'Name': 'A100', 'Count': 2, 'MemoryInfo': {'SizeInMiB': 81920}}], "
                        "'TotalGpuMemoryInMiB': 81920}", 40),
    # Vast: 8x V100 16GB = 131072 MiB (before: 128 GB, not divided only because the rule was "> 200 GB")
    ("vast", "V100", 8, "{'Gpus': [{'Name': 'V100', 'Count': 8, 'MemoryInfo': {'SizeInMiB': 131072}}], "
                        "'TotalGpuMemoryInMiB': 131072}", 16),
    # Shadeform (real row of its catalog): the number is GB, not MiB (before: 80 / 1024 = 0.078 GB)
    ("shadeform", "H100", 1, "{'Gpus': [{'Name': 'H100', 'Manufacturer': 'NVIDIA', 'Count': 1.0, "
                             "'MemoryInfo': {'SizeInMiB': 80}}]}", 80),
    # Shadeform-style GB figure holding an 8-GPU total (320 GB for 8x A100 40GB): divided, not "320 GB per A100"
    ("shadeform", "A100", 8, "{'Gpus': [{'Name': 'A100', 'Manufacturer': 'NVIDIA', 'Count': 8.0, "
                             "'MemoryInfo': {'SizeInMiB': 320}}]}", 40),
    # Lambda (real row): Size = Total on 8 GPUs, and it is per GPU (40 GB A100s, not 5 GB)
    ("lambda", "A100", 8, "{'Gpus': [{'Name': 'A100', 'Manufacturer': 'NVIDIA', 'Count': 8.0, "
                          "'MemoryInfo': {'SizeInMiB': 40960}}], 'TotalGpuMemoryInMiB': 40960}", 40),
    # OCI / Lium rows that list the total in SizeInMiB: 8x H100 = 655360 MiB -> 80 GB each
    ("oci", "H100", 8, "{'Gpus': [{'Name': 'H100', 'Manufacturer': 'NVIDIA', 'Count': 8, "
                       "'MemoryInfo': {'SizeInMiB': 655360}}], 'TotalGpuMemoryInMiB': 655360}", 80),
    ("lium", "H100-SXM", 8, "{'Gpus': [{'Name': 'H100-SXM', 'Manufacturer': 'NVIDIA', 'Count': 8.0, "
                            "'MemoryInfo': {'SizeInMiB': 655360}, 'TotalGpuMemoryInMiB': 655360}]}", 80),
    # OCI (real row): Size per GPU, Total = Size x Count
    ("oci", "H100", 8, "{'Gpus': [{'Name': 'H100', 'Manufacturer': 'NVIDIA', 'Count': 8, "
                       "'MemoryInfo': {'SizeInMiB': 81920}}], 'TotalGpuMemoryInMiB': 655360}", 80),
])
def test_skypilot_gpu_memory_is_per_gpu(cloud: str, name: str, count: int, gpu_info: str, expected: float) -> None:
    assert per_gpu_memory_gb(gpu_info, count, cloud, name) == pytest.approx(expected)


def test_memory_bounds_keep_totals_from_mapping_to_a_bigger_card() -> None:
    """Before: 'V100' with 128 GB (8x 16 GB total) mapped to V100 32GB (rule "30 GB or more"), 'H100' with
    640 GB to H100, 0.078 GB to H100."""
    assert resolve("x", "V100", "", 128)[0] is None and resolve("x", "V100", "", 16)[0] == "v100"
    assert resolve("x", "H100", "", 640)[0] is None and resolve("x", "H100", "", 80 / 1024)[0] is None
    assert resolve("x", "A100", "gpu_1x_a100_80gb", 40)[0] == "a100-40gb"  # the memory wins over a name hint
    assert resolve("vast", "A100 PCIE", "", 40)[0] == "a100-40gb"  # the 40 GB PCIe card, not the 80 GB one
    assert resolve("vast", "Tesla V100", "", 32)[0] == "v100-32gb"
    assert memory_fits("l40s", 46068 / 1024) and not memory_fits("a100-40gb", 80)


@pytest.mark.parametrize(("provider", "name", "expected"), [
    ("runpod", "A100 SXM 40GB", "a100-40gb"), ("verda", "A100-40GB", "a100-40gb"),
    ("verda", "A100-80GB-320GB", "a100-80gb-sxm"), ("vastai", "H200 NVL", "h200-nvl"),
    ("runpod", "RTX 4000 Ada SFF", "rtx-4000-ada"), ("ovh", "Tesla V100S", "v100-32gb"),
])
def test_names_that_failed_to_map(provider: str, name: str, expected: str) -> None:
    """Before: all three came out unmapped (``gpu_id = null``)."""
    assert resolve(provider, name)[0] == expected


# --- allocation classes and provider ids -------------------------------------------------------------------------

def test_lium_is_a_marketplace_and_oracle_has_one_id() -> None:
    """Before: Lium's host-set prices were ``on_demand``; Oracle was ``oracle`` (direct) and ``oci`` (SkyPilot)."""
    assert PRICE_SOURCES["oci"].provider == PRICE_SOURCES["skypilot-oci"].provider == "oci"
    body = (Path(__file__).parent.parent / "pipeline/replay/prices/skypilot-lium/vms.csv").read_bytes()
    raw = RawPayload(source="skypilot-lium", fetched_at=AT, parts=(RawPart(url="x", status=200, body=body),))
    offers = PRICE_SOURCES["skypilot-lium"].parse(raw).offers
    assert offers and {o.allocation for o in offers} <= {"marketplace", "spot"}


def test_azure_nv_a10_v5_sizes_are_slices_of_one_a10() -> None:
    """NV6ads_A10_v5 rents 1/6 of an A10: a fractional offer (before: not collected at all). Constructed row in
    the field layout of the genuine Retail Prices rows; the price is illustrative."""
    item = {"armSkuName": "Standard_NV6ads_A10_v5", "armRegionName": "eastus", "retailPrice": 0.454,
            "currencyCode": "USD", "meterName": "NV6ads A10 v5", "productName": "Virtual Machines NVadsA10 v5 Series",
            "type": "Consumption", "unitOfMeasure": "1 Hour"}
    body = json.dumps({"Items": [item], "NextPageLink": None}).encode()
    raw = RawPayload(source="azure", fetched_at=AT, parts=(RawPart(url="https://x/prices", status=200, body=body),))
    [offer] = PRICE_SOURCES["azure"].parse(raw).offers
    assert offer.fractional and offer.gpu_share == pytest.approx(1 / 6) and offer.gpu_id == "a10"
    assert offer.price_per_gpu_hour == pytest.approx(0.454 * 6)  # the whole-card equivalent


def _raw(source: str, body: object) -> RawPayload:
    return RawPayload(source=source, fetched_at=AT,
                      parts=(RawPart(url=f"https://x/{source}", status=200, body=json.dumps(body).encode()),))


def test_runpod_placeholder_price_of_a_cloud_the_type_is_not_on() -> None:
    """RunPod leaves a stale ``communityPrice`` when ``communityCloud`` is false (a public tracker saw
    ``"communityPrice":0.5,"communityCloud":false`` for H200 for months). Before: published as a 0.50 $/h H200.
    Constructed type in the gpuTypes layout."""
    h200 = {"id": "NVIDIA H200", "displayName": "H200 SXM", "memoryInGb": 141, "maxGpuCount": 1,
            "secureCloud": True, "communityCloud": False, "securePrice": 3.99, "communityPrice": 0.5,
            "secureSpotPrice": None, "communitySpotPrice": None, "lowestPrice": {"stockStatus": "Low"}}
    offers = PRICE_SOURCES["runpod"].parse(_raw("runpod", {"data": {"gpuTypes": [h200]}})).offers
    assert [(o.instance_type, o.price_per_hour) for o in offers] == [("1x_H200-SXM_SECURE", 3.99)]
    assert offers[0].gpu_id == "h200"


def test_ovh_hourly_pricing_and_monthly_plans() -> None:
    """The hourly entry is the one with ``intervalUnit: hour`` (constructed addon in the layout a public test
    quotes); the ``.monthly.postpaid`` plan of the same flavor is ignored, not a second on-demand price."""
    def addon(plan: str, price: int, unit: str) -> dict:
        return {"planCode": plan, "invoiceName": "h100-760", "pricings": [
            {"interval": 1, "intervalUnit": "month", "price": 999_00000000, "type": "renew"},
            {"interval": 1, "intervalUnit": unit, "price": price, "type": "consumption"}],
            "blobs": {"technical": {"cpu": {"cores": 60}, "memory": {"size": 760},
                                    "gpu": {"model": "H100", "number": 2, "memory": {"size": 160}}}}}
    body = {"locale": {"currencyCode": "EUR"}, "addons": [addon("h100-760.consumption", 560_000_000, "hour"),
                                                         addon("h100-760.monthly.postpaid", 999_00000000, "month")]}
    result = PRICE_SOURCES["ovh"].parse(_raw("ovh", body), FxRates(date="2024-02-27", per_eur={"EUR": 1, "USD": 1.0856}))
    [offer] = result.offers
    assert (offer.price_per_hour, offer.currency, offer.gpu_count) == (5.6, "EUR", 2)
    assert offer.gpu_memory_gb == 80 and offer.gpu_id == "h100"  # 160 is the flavor's total: 80 per H100
    assert result.ignored == {"monthly plan of an hourly flavor (the .consumption plan is kept)": 1}


def test_digitalocean_size_without_regions_is_not_an_offer() -> None:
    size = {"slug": "gpu-l40sx1-48gb", "price_hourly": 1.57, "regions": [], "available": False, "vcpus": 8,
            "memory": 65536, "gpu_info": {"count": 1, "model": "nvidia_l40s", "vram": {"amount": 48, "unit": "gib"}}}
    result = PRICE_SOURCES["digitalocean"].parse(_raw("digitalocean", {"sizes": [size], "links": {}}))
    assert result.offers == [] and result.ignored == {"no region offers the size": 1}
