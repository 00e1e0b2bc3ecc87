"""Google Cloud: the Cloud Billing Catalog SKUs of Compute Engine (``GCP_API_KEY``), paged by
``nextPageToken``.

GPU SKUs are per GPU-hour and the host VM is priced separately from its vCPU and RAM SKUs, so a GPU machine's
price is composed: ``vCPUs x core SKU + GiB x RAM SKU + GPUs x GPU SKU`` of the same series, usage type and region
(e.g. a2-highgpu-1g = 12 x 0.031611 + 85 x 0.004237 + 2.933908 = 3.673 $/h). Quoting the GPU SKU alone as the
machine price is the mistake of skypilot-org/skypilot-catalog#31. Machine types whose SKUs are missing are
skipped.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import httpx

from pipeline.sources.base import (
    Ignored,
    ParseResult,
    RawPayload,
    Source,
    collect,
    field,
    json_body,
    make_offer,
)
from pipeline.sources.fx import FxRates
from pipeline.sources.gpu_names import resolve

URL = "https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus?currencyCode=USD"
#: machine type -> (series, GPU SKU name, GPUs, vCPUs, RAM GiB); shapes from GCP's accelerator-optimized docs
MACHINES = {
    "a2-highgpu-1g": ("A2", "Tesla A100", 1, 12, 85), "a2-highgpu-2g": ("A2", "Tesla A100", 2, 24, 170),
    "a2-highgpu-4g": ("A2", "Tesla A100", 4, 48, 340), "a2-highgpu-8g": ("A2", "Tesla A100", 8, 96, 680),
    "a2-megagpu-16g": ("A2", "Tesla A100", 16, 96, 1360),
    "a2-ultragpu-1g": ("A2", "A100 80GB", 1, 12, 170), "a2-ultragpu-2g": ("A2", "A100 80GB", 2, 24, 340),
    "a2-ultragpu-4g": ("A2", "A100 80GB", 4, 48, 680), "a2-ultragpu-8g": ("A2", "A100 80GB", 8, 96, 1360),
    "a3-highgpu-8g": ("A3", "H100 80GB", 8, 208, 1872), "a3-ultragpu-8g": ("A3", "H200 141GB", 8, 224, 2952),
    "g2-standard-4": ("G2", "L4", 1, 4, 16), "g2-standard-8": ("G2", "L4", 1, 8, 32),
    "g2-standard-12": ("G2", "L4", 1, 12, 48), "g2-standard-16": ("G2", "L4", 1, 16, 64),
    "g2-standard-24": ("G2", "L4", 2, 24, 96), "g2-standard-32": ("G2", "L4", 1, 32, 128),
    "g2-standard-48": ("G2", "L4", 4, 48, 192), "g2-standard-96": ("G2", "L4", 8, 96, 384),
}
#: GPU SKU name -> GPU memory per GPU in GB as GCP's GPU models table lists it
#: (https://cloud.google.com/compute/docs/gpus: A100 40GB, A100 80GB, H100 80GB, H200 141GB, L4 24GB); the
#: billing catalog states none (without this table GCP offers have no GPU memory)
GPU_MEMORY_GB = {"Tesla A100": 40, "A100 80GB": 80, "H100 80GB": 80, "H200 141GB": 141, "L4": 24}
#: on-demand "Nvidia L4 GPU running in Americas"; spot mostly "Nvidia L4 GPU attached to Spot Preemptible VMs running
#: in Americas", a few "Spot Preemptible Nvidia ..." (usageType Preemptible says which, the wording varies); newer SKUs
#: drop the vendor: "H200 141GB GPU running in Americas" (a3-ultragpu-8g's H200 SKUs among them)
GPU_SKU = re.compile(r"^(?:Spot Preemptible )?(?:Nvidia )?(?P<name>.+?) GPU(?: attached to Spot Preemptible VMs)?"
                     r" running in (?P<geo>.+)$")
NO_HOST_SKUS = Ignored("GPU SKU without its series' vCPU/RAM SKUs in that region")
USAGES = {"OnDemand": "on_demand", "Preemptible": "spot"}  # commitments and reservations are other terms
VM_SKU = re.compile(r"^(?:Spot Preemptible )?(?P<series>\w+) Instance (?P<kind>Core|Ram) running in (?P<geo>.+)$")


def unit_price(source: str, sku: dict) -> float:
    rate = field(source, sku, "pricingInfo", 0, "pricingExpression", "tieredRates", -1, "unitPrice")
    return int(rate.get("units") or 0) + int(rate.get("nanos") or 0) / 1e9


class GoogleCloud(Source):
    name = "gcp"
    provider = "google"
    auth = "API key (GCP_API_KEY)"
    key_env = ("GCP_API_KEY",)
    endpoint = URL
    unit = "USD per GPU-hour + per vCPU-hour + per GiB-hour"

    def fetch(self, client: httpx.Client) -> RawPayload:
        key = f"&key={self.key()}" if self.configured() else ""
        parts, token = [], None
        while len(parts) < 100:
            part = self.get(client, URL + key + (f"&pageToken={token}" if token else ""))
            parts.append(part)
            token = json_body(self.name, part).get("nextPageToken")
            if not token:
                break
        return RawPayload(source=self.name, fetched_at=datetime.now(UTC), parts=tuple(parts))

    def parse_payload(self, raw: RawPayload, rates: FxRates | None) -> ParseResult:
        skus = [s for p in raw.parts for s in field(self.name, json_body(self.name, p), "skus")]
        gpus: dict[tuple[str, str, str], float] = {}
        vm: dict[tuple[str, str, str, str], float] = {}
        for sku in skus:
            desc = field(self.name, sku, "description")
            usage = field(self.name, sku, "category", "usageType")
            if usage not in USAGES:
                continue
            for region in sku.get("serviceRegions") or []:
                if (m := GPU_SKU.match(desc)) and sku["category"].get("resourceGroup") == "GPU":
                    if price := unit_price(self.name, sku):  # 0: no GPU sold at that SKU (never a free GPU)
                        gpus[(m["name"], usage, region)] = price
                elif m := VM_SKU.match(desc):
                    vm[(m["series"], m["kind"], usage, region)] = unit_price(self.name, sku)
        rows = [(machine, spec, usage, region) for machine, spec in MACHINES.items()
                for (name, usage, region) in gpus if name == spec[1]]

        def build(row):  # type: ignore[no-untyped-def]
            machine, (series, gpu, count, vcpus, ram), usage, region = row
            core, mem = vm.get((series, "Core", usage, region)), vm.get((series, "Ram", usage, region))
            if core is None or mem is None:
                return NO_HOST_SKUS  # the machine cannot be priced whole
            price = vcpus * core + ram * mem + count * gpus[(gpu, usage, region)]
            return make_offer(self.name, self.provider, instance_type=machine, gpu_name=gpu, gpu_count=count,
                              price=price, unit="instance-hour", currency="USD", memory_gb=GPU_MEMORY_GB.get(gpu),
                              allocation=USAGES[usage], observed_at=raw.fetched_at,
                              rates=rates, resolve=resolve, region=region, vcpus=vcpus, ram_gb=ram)

        return collect(sorted(rows), build)
