#!/usr/bin/env python3
"""Rebuild ``pipeline/replay/prices/`` from ``../shared/reference/prices/`` (a developer tool; CI never runs it).

Real recordings are copied with only the ``_provenance`` notes the research pass added removed (those notes live
in docs/sources.md). Sources without a real recording get a payload built to their documented shape
(``samples/*.SCHEMA.md``); every manifest entry says which it is in ``recording``.

Every entry also carries ``captured_at`` (when the payload was really seen at its source, from the capture notes in
``shared/reference/prices``) and ``captured_at_basis`` (where that date comes from, or ``nominal`` where no capture
date exists). ``series.json`` lists earlier recordings of the same URLs (the second SkyPilot catalog versions in
``skypilot_catalog/history/``) as an ordered replay series; their true order is unknown, so it is nominal.

``--series`` only re-stamps the existing manifest with capture dates and rewrites the series (payloads untouched).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pipeline.settings import REPLAY_SNAPSHOT_AT  # noqa: E402
from pipeline.sources import (  # noqa: E402
    akash,
    aws,
    azure,
    digitalocean,
    ecb,
    gcp,
    gpu_price_feed,
    lambda_cloud,
    oci,
    ovh,
    runpod,
    scaleway,
    skypilot,
    vastai,
    verda,
    vultr,
)

SHARED = ROOT.parent / "shared" / "reference" / "prices"
OUT = ROOT / "pipeline" / "replay" / "prices"
entries: list[dict] = []


def put(source: str, url: str, name: str, data: object, content_type: str = "application/json", method: str = "GET",
        kind: str = "real") -> None:
    path = OUT / source / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    elif isinstance(data, str):
        path.write_text(data)
    else:
        path.write_text(json.dumps(data, indent=1) + "\n")
    entries.append(dict(source=source, method=method, url=url, file=f"{source}/{name}", status=200,
                        content_type=content_type, recording=kind))


def strip(d: dict) -> dict:
    return {k: v for k, v in d.items() if k != "_provenance"}


def real() -> None:
    sc = strip(json.loads((SHARED / "samples/scaleway.json").read_text()))
    put("scaleway", scaleway.URL.format(zone="fr-par-2"), "servers.fr-par-2.json", sc,
        kind="real (zone not recorded in the capture; replayed as fr-par-2, other zones answer 404)")
    ak = json.loads((SHARED / "samples/akash.json").read_text())
    put("akash", akash.URL, "gpu-prices.json", {"models": ak["models"]},
        kind="real (H100 model only; the capturing repo's fetchedAt/url wrapper removed)")
    put("azure", f"{azure.BASE}?$filter={quote(azure._filter())}", "retail-prices.json",
        strip(json.loads((SHARED / "samples/azure.json").read_text())), kind="real rows, trimmed fields")
    put("lambda", lambda_cloud.URL, "instance-types.json",
        strip(json.loads((SHARED / "samples/lambda.json").read_text())), kind="real, trimmed fields")
    g = json.loads((SHARED / "samples/real/gcp.skus.excerpt.json").read_text())
    put("gcp", gcp.URL, "skus.page1.json", g, kind="real excerpt (3 SKUs)")
    put("gcp", gcp.URL + "&pageToken=" + g["nextPageToken"], "skus.page2.json", {"skus": [], "nextPageToken": ""},
        kind="constructed: empty last page after the real excerpt's nextPageToken")
    vast = json.loads((SHARED / "samples/real/vast.search_offers_raw.excerpt.json").read_text())
    put("vastai", vastai.URL, "bundles.json", {"offers": vast},
        kind="real offer (CLI --raw dump), constructed {offers: [...]} envelope")
    for url in vastai.URLS[1:]:  # the per-GPU queries: no recording of them exists
        put("vastai", url, "bundles.empty.json", {"offers": []},
            kind="constructed: empty answer to a per-GPU query (no capture of these queries exists)")
    put("ecb", ecb.URL, "eurofxref-daily.xml", (SHARED / "samples/real/ecb.eurofxref-daily.xml").read_bytes(),
        content_type="text/xml", kind="real (rates of 2024-02-27)")
    for src in skypilot.SOURCES:
        if src.cloud == "runpod":
            path = SHARED / "skypilot_catalog/v7/runpod/vms.csv"
        elif src.cloud == "oci":
            path = SHARED / "samples/oci.skypilot_catalog.csv"
        else:
            path = SHARED / f"skypilot_catalog/v8/{src.cloud}/vms.csv"
        put(src.name, src.endpoint, "vms.csv", path.read_bytes(), content_type="text/csv",
            kind="real excerpt" if src.cloud == "oci" else "real (GPU rows, byte for byte)")


def shaped() -> None:
    gpu_item = lambda part, name, value: {  # noqa: E731
        "partNumber": part, "displayName": f"Compute - GPU - {name}", "metricName": "GPU Per Hour",
        "serviceCategory": "Compute - GPU",
        "currencyCodeLocalizations": [{"currencyCode": "USD", "prices": [{"model": "PAY_AS_YOU_GO", "value": value}]}]}
    put("oci", oci.PRODUCTS, "products.json", {"lastUpdated": "2026-09-01T14:26:53.943Z", "items": [
        gpu_item("B110978", "B200", 14), gpu_item("B111111", "B300", 15), gpu_item("B98415", "H100", 10),
        gpu_item("B109479", "MI355X", 8.6)]},
        kind="shape-only (oci.SCHEMA.md); B200 14 / B300 15 $/GPU-h as observed in NOTES.md, H100 = 80/8 from the "
             "SkyPilot catalog, MI355X illustrative")
    shape = lambda name, part, pre: {  # noqa: E731
        "name": name, "status": "ACTIVE", "subType": {"value": "gpu"}, "gpuQty": 8, "allowPreemptible": pre,
        "products": [{"type": {"value": "gpu"}, "partNumber": part, "qty": 8}]}
    put("oci", oci.SHAPES, "shapes.json", {"items": [
        shape("BM.GPU.B200.8", "B110978", False), shape("BM.GPU.B300.8", "B111111", False),
        shape("BM.GPU.H100.8", "B98415", True), shape("BM.GPU.MI355X.8", "B109479", False),
        {"name": "VM.Standard.E5.Flex", "status": "ACTIVE", "subType": {"value": "standard"}, "products": []}]},
        kind="shape-only (oci.SCHEMA.md)")
    put("vultr", vultr.PLANS, "plans.json", {"plans": [
        {"id": "vcg-a100-1c-6g-4vram", "type": "vcg", "vcpu_count": 1, "ram": 6144, "disk": 70, "monthly_cost": 90,
         "hourly_cost": 0.123, "deploy_ondemand": True, "deploy_preemptible": False, "gpu_vram_gb": 4,
         "gpu_type": "NVIDIA_A100", "gpu_count": "1/20", "locations": ["ewr", "ord"]},
        {"id": "vcg-l40s-16c-180g-48vram", "type": "vcg", "vcpu_count": 16, "ram": 184320, "monthly_cost": 1214,
         "hourly_cost": 1.663, "hourly_cost_preemptible": 0.83, "deploy_ondemand": True, "deploy_preemptible": True,
         "gpu_vram_gb": 48, "gpu_type": "NVIDIA_L40S", "gpu_count": 1, "locations": ["ewr"],
         "location_cost": {"ewr": {"hourly_cost": 1.671, "monthly_cost": 1220}}}],
        "meta": {"total": 2, "links": {"next": "", "prev": ""}}},
        kind="shape-only (vultr.SCHEMA.md; the 1/20 A100 slice at 0.123 $/h as quoted there), L40S illustrative")
    put("vultr", vultr.METAL, "plans-metal.json", {"plans_metal": [
        {"id": "vcg-h100-216c-1914gb-640vram", "type": "vbm", "cpu_threads": 216, "ram": 1959936,
         "monthly_cost": 17462, "hourly_cost": 23.92, "locations": ["ewr", "lax"]},
        {"id": "vbm-4c-32gb", "type": "vbm", "cpu_threads": 4, "ram": 32768, "monthly_cost": 120, "hourly_cost": 0.164,
         "locations": ["ewr"]}], "meta": {"total": 2, "links": {"next": "", "prev": ""}}},
        kind="shape-only; 23.92 $/h for 8x H100 metal as quoted in shared/reference/prices notes")
    put("verda", verda.URL, "instance-types.json", [
        {"instance_type": "1H100.80S.32V", "model": "H100", "price_per_hour": "2.29", "spot_price": "0.8015",
         "currency": "usd", "gpu": {"number_of_gpus": 1, "description": "1x H100 SXM5 80GB"},
         "gpu_memory": {"size_in_gigabytes": 80}, "cpu": {"number_of_cores": 32}, "memory": {"size_in_gigabytes": 185}},
        {"instance_type": "8B200.240V", "model": "B200", "price_per_hour": "39.92", "spot_price": "13.97",
         "currency": "usd", "gpu": {"number_of_gpus": 8, "description": "8x B200 SXM6 180GB"},
         "gpu_memory": {"size_in_gigabytes": 1440}, "cpu": {"number_of_cores": 240},
         "memory": {"size_in_gigabytes": 1800}},
        {"instance_type": "CPU.4V.16G", "model": "CPU Node", "price_per_hour": "0.05", "currency": "usd",
         "gpu": {"number_of_gpus": 0}, "cpu": {"number_of_cores": 4}}],
        kind="shape-only (verda.SCHEMA.md; 1H100 values from it), B200 illustrative")
    put("ovh", ovh.URL, "catalog.json", {"locale": {"currencyCode": "EUR", "subsidiary": "IE"}, "addons": [
        {"planCode": "h100-380.consumption", "invoiceName": "h100-380", "product": "publiccloud-instance",
         "pricings": [{"price": 279000000, "intervalUnit": "hour", "capacities": ["consumption"]}],
         "blobs": {"commercial": {"name": "H100-380"}, "technical": {
             "cpu": {"cores": 30}, "memory": {"size": 380}, "os": {"family": "linux"},
             "gpu": {"model": "H100", "number": 1, "memory": {"size": 80}}}}},
        {"planCode": "h100-380.monthly.postpaid", "invoiceName": "h100-380",
         "pricings": [{"price": 150000000000, "intervalUnit": "month"}],
         "blobs": {"technical": {"gpu": {"model": "H100", "number": 1}}}},
        {"planCode": "l40s-180.consumption", "invoiceName": "l40s-180",
         "pricings": [{"price": 280000000, "intervalUnit": "hour"}],
         "blobs": {"technical": {"cpu": {"cores": 30}, "memory": {"size": 180},
                                 "gpu": {"model": "L40S", "number": 2, "memory": {"size": 48}}}}},
        {"planCode": "b3-8.consumption", "invoiceName": "b3-8", "pricings": [{"price": 6100000, "intervalUnit": "hour"}],
         "blobs": {"technical": {"cpu": {"cores": 2}, "memory": {"size": 8}}}}]},
        kind="shape-only (ovh.SCHEMA.md; 279000000 = 2.79 EUR/h as its example), others illustrative")
    header = ('"SKU","OfferTermCode","RateCode","TermType","PriceDescription","EffectiveDate","StartingRange",'
              '"EndingRange","Unit","PricePerUnit","Currency","Instance Type","Operating System","Tenancy",'
              '"Pre Installed S/W","CapacityStatus","vCPU","Memory","GPU","GPU Memory","Region Code"')
    meta = ('"FormatVersion","v1.0"\n"Disclaimer","This pricing list is for informational purposes only."\n'
            '"Publication Date","2026-11-20T00:00:00Z"\n"Version","20261120000000"\n"OfferCode","AmazonEC2"\n')

    def row(itype: str, price: str, gpus: str, gmem: str, region: str, term: str = "OnDemand", os_: str = "Linux",
            vcpu: str = "192") -> str:
        return (f'"X","Y","Z","{term}","desc","2026-11-01","0","Inf","Hrs","{price}","USD","{itype}","{os_}",'
                f'"Shared","","Used","{vcpu}","2048 GiB","{gpus}","{gmem} GB","{region}"')

    for region in aws.REGIONS:
        rows = [row("p5.48xlarge", "55.0400000000", "8", "640", region),
                row("p5.48xlarge", "59.0000000000", "8", "640", region, os_="Windows"),
                row("p4d.24xlarge", "21.9576420000", "8", "320", region),
                row("p4de.24xlarge", "27.4470000000", "8", "640", region),
                row("p5en.48xlarge", "63.2960000000", "8", "1128", region),
                row("g6e.xlarge", "1.8610000000", "1", "48", region, vcpu="4"),
                row("p5.48xlarge", "40.0000000000", "8", "640", region, term="Reserved"),
                row("m7i.large", "0.1008", "0", "0", region, vcpu="2")]
        put("aws", aws.URL.format(region=region), f"index.{region}.csv", meta + header + "\n" + "\n".join(rows) + "\n",
            content_type="text/csv",
            kind="shape-only (aws.SCHEMA.md); p5.48xlarge 55.04 and p4d 21.957642 are quoted in gpu_names.csv, "
                 "the rest illustrative")
    put("runpod", runpod.URL, "gpu-types.json", {"data": {"gpuTypes": [
        {"id": "NVIDIA H100 80GB HBM3", "displayName": "H100 SXM", "manufacturer": "Nvidia", "memoryInGb": 80,
         "maxGpuCount": 8, "secureCloud": True, "communityCloud": True, "securePrice": 2.69, "communityPrice": 1.99,
         "secureSpotPrice": 1.75, "communitySpotPrice": None,
         "lowestPrice": {"stockStatus": "High", "availableGpuCounts": [1, 2, 4, 8]}},
        {"id": "NVIDIA GeForce RTX 4090", "displayName": "RTX 4090", "manufacturer": "Nvidia", "memoryInGb": 24,
         "maxGpuCount": 8, "secureCloud": True, "communityCloud": True, "securePrice": 0.69, "communityPrice": 0.34,
         "secureSpotPrice": 0.35, "communitySpotPrice": 0.2,
         "lowestPrice": {"stockStatus": "Medium", "availableGpuCounts": [1, 2, 4]}}]}},
        method="POST", kind="shape-only (runpod.SCHEMA.md); values illustrative")
    put("digitalocean", digitalocean.URL, "sizes.json", {"sizes": [
        {"slug": "gpu-h100x1-80gb", "memory": 245760, "vcpus": 20, "disk": 720, "price_monthly": 2474.7,
         "price_hourly": 3.39, "regions": ["nyc2", "tor1"], "available": True,
         "gpu_info": {"count": 1, "model": "nvidia_h100", "vram": {"amount": 80, "unit": "gib"}}},
        {"slug": "gpu-h100x8-640gb", "memory": 1966080, "vcpus": 160, "disk": 2046, "price_monthly": 17461.6,
         "price_hourly": 23.92, "regions": ["nyc2", "tor1", "atl1", "ams3"], "available": True,
         "gpu_info": {"count": 8, "model": "nvidia_h100", "vram": {"amount": 640, "unit": "gib"}}},
        {"slug": "gpu-mi300x8-1536gb", "memory": 1966080, "vcpus": 160, "price_hourly": 15.92, "regions": ["atl1"],
         "available": True, "gpu_info": {"count": 8, "model": "amd_mi300x", "vram": {"amount": 1536, "unit": "gib"}}},
        {"slug": "s-1vcpu-1gb", "memory": 1024, "vcpus": 1, "price_hourly": 0.00893, "regions": ["nyc1"],
         "available": True}], "links": {"pages": {}}, "meta": {"total": 4}},
        kind="shape-only (digitalocean.SCHEMA.md; 3.39 / 23.92 $/h as quoted there), MI300X illustrative; vram.amount "
             "is the droplet's total as in the real API (640 for gpu-h100x8-640gb, dstackai/gpuhunt's test)")


def hetzner_page() -> None:
    page = (OUT / "hetzner" / "matrix-gpu.html").read_text()  # hand-written, kept as committed
    put("hetzner", "https://www.hetzner.com/dedicated-rootserver/matrix-gpu/", "matrix-gpu.html", page,
        content_type="text/html",
        kind="shape-only: constructed page (GEX44 / GEX130 models from shared/reference/prices/gpu_names.csv; "
             "prices illustrative); the real page's markup was not available offline")


#: the gpu-price-feed history files bundled (month -> the commit read_file served, the file's characters there, its
#: lines): every line kept, its ``cheapest`` cut to FEED_KEYS, each kept price as the line states it (docs/sources.md)
FEED = {"2026-07": ("08112910a3d495ba12ad44e11500b7236d11c77e", 16452, 4),
        "2026-08": ("03b0c63082ffe031c4a7f683fc7ca677370c63e2", 97451, 23),
        "2026-09": ("0563729f05252529ae1db8f12b7a37bb750539d0", 67807, 16),
        "2026-10": ("3c41e7753cec450521498c9aa31d5f1893e4aa42", 18121, 4)}
FEED_KEYS = ("H100 80GB SXM", "H100 80GB PCIe", "H100 94GB NVL", "H200 141GB SXM", "H200 141GB (form unstated)",
             "A100 80GB SXM", "RTX 4090 24GB")
#: one capture time for the whole fetch (a replayed fetch keeps one time): the newest line the copies hold
FEED_AT = "2026-10-04T12:20:45+00:00"


def price_feed() -> None:
    """The gpu-price-feed recordings, kept as committed (cut from the feed's files, which are not in shared/)."""
    for month, (commit, chars, lines) in FEED.items():
        name = f"{month}.jsonl"
        put("gpu-price-feed", gpu_price_feed.URL.format(month=month), name, (OUT / "gpu-price-feed" / name).read_bytes(),
            content_type="text/plain; charset=utf-8",
            kind=f"real lines of {gpu_price_feed.REPO} data/history/v2/{name} at commit {commit} ({chars:,} characters, "
                 f"{lines} lines): every line, its cheapest map cut to the keys {', '.join(FEED_KEYS)}; prices as "
                 "written; a provider with none of those keys left out of that line")
        entries[-1] |= {"captured_at": FEED_AT, "captured_at_basis": "lower bound: the newest collected_at of the "
                        "four copies (2026-10.jsonl's last line); the copies' commit dates are not recorded"}


#: source -> (captured_at, basis) for recordings whose capture date is known (shared/reference/prices/NOTES.md and
#: samples/real/SOURCES.md). Everything else is stamped with the reference freeze time and says ``nominal``.
CAPTURED = {
    "scaleway": ("2026-10-01T12:00:00+00:00", "capture date 2026-10-01 (NOTES.md; time of day unknown, noon UTC)"),
    "akash": ("2026-09-28T12:00:00+00:00", "capture date 2026-09-28 (NOTES.md; time of day unknown, noon UTC)"),
    "azure": ("2026-09-16T12:00:00+00:00", "capture date 2026-09-16 (NOTES.md; time of day unknown, noon UTC)"),
    "lambda": ("2026-07-30T12:00:00+00:00", "capture date 2026-07-30 (NOTES.md; time of day unknown, noon UTC)"),
    "ecb": ("2024-02-27T15:00:00+00:00", "the rates' own date 2024-02-27, published 16:00 CET (SOURCES.md)"),
    "gcp": ("2023-03-24T12:00:00+00:00", "lower bound: the SKUs' effectiveTime 2023-03-24 (capture date unknown; "
            "SOURCES.md)"),
    "vastai": ("2024-07-30T12:00:00+00:00", "lower bound: the offer's start_date 2024-07-30 (capture date unknown; "
               "SOURCES.md)"),
}
NOMINAL = "nominal: no capture date exists ({why}); stamped with the reference freeze time"
#: the second SkyPilot catalog versions (skypilot_catalog/history/<commit>/<cloud>/vms.csv), replayed one step
#: before the current recordings; a week earlier is a nominal spacing, not a known date
HISTORY = {"lambda": "95eaf484fa404db8356b745607d162ea4fdf8fda", "vast": "680a69b15e686d34fd0c808ddc62c10df27bb46d",
           "jarvislabs": "8f097115551e2c48a5eb9a8fafe37e23290ff691"}
HISTORY_AT = "2026-11-21T12:00:00+00:00"


def stamp(entry: dict) -> dict:
    """Add ``captured_at`` / ``captured_at_basis`` to a manifest entry (kept if already present)."""
    if "captured_at" in entry:
        return entry
    source = entry["source"]
    if source in CAPTURED:
        at, basis = CAPTURED[source]
    elif source.startswith("skypilot-"):
        at, basis = REPLAY_SNAPSHOT_AT.isoformat(), NOMINAL.format(
            why="SkyPilot catalog commit dates could not be seen (skypilot_catalog/README.md)")
    else:
        at, basis = REPLAY_SNAPSHOT_AT.isoformat(), NOMINAL.format(why="payload constructed to the documented shape")
    return entry | {"captured_at": at, "captured_at_basis": basis}


def series(current: list[dict]) -> dict:
    """``series.json``: the history step (copied catalog versions) then the current manifest."""
    urls = {e["source"]: e["url"] for e in current}
    step = []
    for cloud, commit in HISTORY.items():
        src = SHARED / "skypilot_catalog" / "history" / commit[:7] / cloud / "vms.csv"
        rel = f"history/{commit[:7]}/{cloud}/vms.csv"
        (OUT / rel).parent.mkdir(parents=True, exist_ok=True)
        (OUT / rel).write_bytes(src.read_bytes())
        step.append({"source": f"skypilot-{cloud}", "method": "GET", "url": urls[f"skypilot-{cloud}"], "file": rel,
                     "status": 200, "content_type": "text/csv",
                     "recording": f"real (GPU rows, byte for byte) of catalogs/v8/{cloud}/vms.csv at commit {commit}",
                     "captured_at": HISTORY_AT,
                     "captured_at_basis": "nominal: commit date unknown (skypilot_catalog/history/README.md); "
                                          "placed one week before the current catalog"})
    return {"about": "Replay series: earlier recordings of the same URLs, replayed in this order before "
                     "manifest.json (the current recordings), so a replayed history has real price changes. The "
                     "true capture order of the SkyPilot catalog versions is unknown: this order and its times are "
                     "nominal.",
            "order": "nominal",
            "steps": [{"id": "skypilot-history", "as_of": HISTORY_AT, "responses": step},
                      {"id": "current", "as_of": REPLAY_SNAPSHOT_AT.isoformat(), "responses": "manifest.json"}]}


def write(current: list[dict]) -> None:
    current = [stamp(e) for e in current]
    (OUT / "manifest.json").write_text(json.dumps({"responses": current}, indent=1) + "\n")
    (OUT / "series.json").write_text(json.dumps(series(current), indent=1) + "\n")


if __name__ == "__main__":
    if "--series" in sys.argv[1:]:
        entries = json.loads((OUT / "manifest.json").read_text())["responses"]
    else:
        real()
        shaped()
        hetzner_page()
        price_feed()
    write(entries)
    print(f"{len(entries)} recorded responses in {OUT}, series in {OUT / 'series.json'}")
