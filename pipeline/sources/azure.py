"""Azure Retail Prices: ``GET https://prices.azure.com/api/retail/prices`` with an OData filter (no key), paged
by ``NextPageLink``. USD per VM-hour. The price API has no GPU facts: ``GPU_SKUS`` maps the GPU VM sizes we track
(after SkyPilot's ``fetch_azure.py`` family table and its hard-coded counts) with the GPU memory Microsoft's size
pages state per size. A retail price of 0 means nothing is sold at that meter (ignored, not rejected). Windows
rows and Low Priority (Batch) meters are dropped; meters ending in " Spot" are spot prices. Rows of other VM sizes, Windows,
DevTest or reservation terms, and superseded prices (an ``effectiveEndDate`` in the past: the preview API returns
retired prices beside current ones) are counted as ignored.
"""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import quote

import httpx

from pipeline.sources.base import (
    NOT_OFFERED,
    Ignored,
    ParseResult,
    RawPayload,
    Source,
    collect,
    field,
    json_body,
    listed_price,
    make_offer,
)
from pipeline.sources.fx import FxRates
from pipeline.sources.gpu_names import resolve

BASE = "https://prices.azure.com/api/retail/prices"
OTHER_TERMS = Ignored("Windows, Low Priority or non-Consumption terms")
SUPERSEDED = Ignored("superseded price (effectiveEndDate passed)")
NOT_OFFERED_HERE = Ignored(NOT_OFFERED)
LEARN = "https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/"
#: armSkuName -> (GPU name, GPUs per VM (a fraction for a slice of one card), GPU memory per GPU device in GB as
#: Microsoft lists it for the size (a slice: the slice's), the series page that says so). The price API has no
#: GPU facts at all (no GPU memory on 43 of 43 offers of a genuine capture).
GPU_SKUS: dict[str, tuple[str, float, float, str]] = {
    "Standard_ND96isr_H100_v5": ("H100", 8, 80, "nd-h100-v5-series"),
    "Standard_ND96is_H100_v5": ("H100", 8, 80, "nd-h100-v5-series"),
    "Standard_NC40ads_H100_v5": ("H100 NVL", 1, 94, "ncadsh100v5-series"),
    "Standard_NC80adis_H100_v5": ("H100 NVL", 2, 94, "ncadsh100v5-series"),
    "Standard_ND96isr_H200_v5": ("H200", 8, 141, "nd-h200-v5-series"),
    "Standard_ND128isr_NDR_GB200_v6": ("GB200", 4, 186, "nd-gb200-v6-series"),
    "Standard_ND128isr_GB300_v6": ("GB300", 4, 288, "nd-gb300-v6-series"),
    "Standard_ND96is_MI300X_v5": ("MI300X", 8, 192, "nd-mi300x-v5-series"),
    "Standard_ND96isr_MI300X_v5": ("MI300X", 8, 192, "nd-mi300x-v5-series"),
    "Standard_NC24ads_A100_v4": ("A100 PCIE", 1, 80, "nca100v4-series"),
    "Standard_NC48ads_A100_v4": ("A100 PCIE", 2, 80, "nca100v4-series"),
    "Standard_NC96ads_A100_v4": ("A100 PCIE", 4, 80, "nca100v4-series"),
    "Standard_ND96amsr_A100_v4": ("A100-80GB", 8, 80, "ndma100v4-series"),
    "Standard_ND96asr_v4": ("A100", 8, 40, "nda100v4-series"),
    # NVadsA10 v5: slices of one A10 (1/6, 1/3, 1/2: 4, 8, 12 GB of its 24 GB) up to two whole cards; fractional
    "Standard_NV6ads_A10_v5": ("A10", 1 / 6, 4, "nvadsa10v5-series"),
    "Standard_NV12ads_A10_v5": ("A10", 1 / 3, 8, "nvadsa10v5-series"),
    "Standard_NV18ads_A10_v5": ("A10", 1 / 2, 12, "nvadsa10v5-series"),
    "Standard_NV36ads_A10_v5": ("A10", 1, 24, "nvadsa10v5-series"),
    "Standard_NV36adms_A10_v5": ("A10", 1, 24, "nvadsa10v5-series"),
    "Standard_NV72ads_A10_v5": ("A10", 2, 24, "nvadsa10v5-series"),
    # NCv3 (V100 PCIe 16GB) and NDv2 (V100 SXM2 32GB)
    "Standard_NC6s_v3": ("V100", 1, 16, "ncv3-series"), "Standard_NC12s_v3": ("V100", 2, 16, "ncv3-series"),
    "Standard_NC24s_v3": ("V100", 4, 16, "ncv3-series"), "Standard_NC24rs_v3": ("V100", 4, 16, "ncv3-series"),
    "Standard_ND40rs_v2": ("V100-32GB", 8, 32, "ndv2-series"),
}
#: whole-card memory of the slices above (what the GPU map is matched on)
CARD_MEMORY_GB = {"A10": 24}


def _filter() -> str:
    skus = " or ".join(f"armSkuName eq '{s}'" for s in GPU_SKUS)
    return f"serviceName eq 'Virtual Machines' and priceType eq 'Consumption' and ({skus})"


class Azure(Source):
    name = provider = "azure"
    endpoint = BASE
    unit = "USD per VM-hour"
    known_enums = {"type": ("Consumption", "DevTestConsumption", "Reservation")}

    def enum_values(self, raw: RawPayload) -> dict[str, set[str]]:
        items = [i for p in raw.parts if p.status == 200 for i in json_body(self.name, p).get("Items") or []]
        return {"type": {str(i["type"]) for i in items if i.get("armSkuName") in GPU_SKUS and i.get("type")}}

    def fetch(self, client: httpx.Client) -> RawPayload:
        url: str | None = f"{BASE}?$filter={quote(_filter())}"
        parts = []
        while url and len(parts) < 50:
            part = self.get(client, url)
            parts.append(part)
            url = json_body(self.name, part).get("NextPageLink")
        return RawPayload(source=self.name, fetched_at=datetime.now(UTC), parts=tuple(parts))

    def parse_payload(self, raw: RawPayload, rates: FxRates | None) -> ParseResult:
        items = [i for p in raw.parts for i in field(self.name, json_body(self.name, p), "Items")]

        def build(item):  # type: ignore[no-untyped-def]
            sku = field(self.name, item, "armSkuName")
            meter = str(item.get("meterName", ""))
            if sku not in GPU_SKUS:
                return None
            if "Windows" in str(item.get("productName", "")) or "Low Priority" in meter:
                return OTHER_TERMS
            if item.get("type", "Consumption") != "Consumption":
                return OTHER_TERMS
            end = str(item.get("effectiveEndDate") or "")
            if end and end[:10] < raw.fetched_at.date().isoformat():
                return SUPERSEDED
            gpu, count, memory, _ = GPU_SKUS[sku]
            price = listed_price(self.name, field(self.name, item, "retailPrice"), "retailPrice")
            if price is None:
                return NOT_OFFERED_HERE  # a 0 retail price: nothing to rent at that meter
            return make_offer(self.name, self.provider, instance_type=sku, gpu_name=gpu, gpu_count=count,
                              gpu_share=min(count, 1.0), memory_gb=memory,
                              parent_memory_gb=CARD_MEMORY_GB.get(gpu) if count < 1 else None,
                              price=price,
                              unit="instance-hour", currency=str(item.get("currencyCode", "USD")),
                              allocation="spot" if meter.endswith(" Spot") else "on_demand", observed_at=raw.fetched_at,
                              rates=rates, resolve=resolve, region=field(self.name, item, "armRegionName"))

        return collect(items, build)
