"""SkyPilot's catalog CSVs (skypilot-org/skypilot-catalog ``catalogs/v8/<cloud>/vms.csv``) as an aggregator:
one source per cloud, named ``skypilot-<cloud>``. Columns: InstanceType, AcceleratorName, AcceleratorCount,
vCPUs, MemoryGiB, GpuInfo, Price, SpotPrice, Region, AvailabilityZone; prices USD per instance-hour.

SkyPilot's Vast rows are medians of bucketed marketplace offers (``marketplace_median``); RunPod's are per pod
of the listed GPU count. Empty or zero prices mean "not offered" (e.g. spot-only shapes) and are skipped.
"""

from __future__ import annotations

import ast
import csv
import io

import httpx

from pipeline.sources.base import (
    ParseError,
    ParseResult,
    RawPayload,
    RowOffers,
    Source,
    collect,
    make_offer,
    number,
)
from pipeline.sources.fx import FxRates
from pipeline.sources.gpu_names import resolve

BASE = "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs"
REQUIRED = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region")

#: cloud -> (catalog version, provider name used in offers)
CLOUDS = {
    "lambda": ("v8", "lambda"), "vast": ("v8", "vast"), "shadeform": ("v8", "shadeform"), "verda": ("v8", "verda"),
    "nebius": ("v8", "nebius"), "lium": ("v8", "lium"), "seeweb": ("v8", "seeweb"), "hyperstack": ("v8", "hyperstack"),
    "yotta": ("v8", "yotta"), "mithril": ("v8", "mithril"), "jarvislabs": ("v8", "jarvislabs"),
    "hyperbolic": ("v8", "hyperbolic"), "runpod": ("v7", "runpod"), "oci": ("v8", "oci"),
}


def per_gpu_memory_gb(gpu_info: str, count: float) -> float | None:
    """Per-GPU memory from SkyPilot's python-repr GpuInfo; None when absent. The field holds the per-GPU size
    in most catalogs and the total in some (Vast), so a value over 200 GB per GPU is divided by the count."""
    try:
        info = ast.literal_eval(gpu_info)
        mib = float(info["Gpus"][0]["MemoryInfo"]["SizeInMiB"])
    except (ValueError, SyntaxError, KeyError, IndexError, TypeError):
        return None
    gb = mib / 1024
    return gb / count if gb > 200 and count >= 1 else (gb or None)


class SkyPilotCatalog(Source):
    auth = "none"
    unit = "USD per instance-hour"

    def __init__(self, cloud: str):
        version, provider = CLOUDS[cloud]
        self.cloud, self.name, self.provider = cloud, f"skypilot-{cloud}", provider
        self.endpoint = f"{BASE}/{version}/{cloud}/vms.csv"
        self.conditional = True  # raw.githubusercontent.com serves ETags

    def fetch(self, client: httpx.Client) -> RawPayload:
        from datetime import UTC, datetime

        part = self.get(client, self.endpoint, conditional=True)
        return RawPayload(source=self.name, fetched_at=datetime.now(UTC), parts=(part,))

    def parse_payload(self, raw: RawPayload, rates: FxRates | None) -> ParseResult:
        text = raw.parts[0].body.decode("utf-8-sig")
        reader = csv.DictReader(io.StringIO(text))
        missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            raise ParseError(self.name, missing[0], f"column missing from the catalog CSV header {reader.fieldnames}")
        allocation = "marketplace_median" if self.cloud == "vast" else "on_demand"

        def build(row: dict[str, str]):  # type: ignore[no-untyped-def]
            if not row["AcceleratorName"]:
                return None
            count = number(self.name, row["AcceleratorCount"], "AcceleratorCount")
            common = dict(instance_type=row["InstanceType"], gpu_name=row["AcceleratorName"], gpu_count=count,
                          unit="instance-hour", currency="USD", observed_at=raw.fetched_at, rates=rates,
                          resolve=resolve, region=row["Region"] or None, zone=row.get("AvailabilityZone") or None,
                          memory_gb=per_gpu_memory_gb(row.get("GpuInfo", ""), count),
                          vcpus=float(row["vCPUs"]) if row.get("vCPUs") else None,
                          ram_gb=float(row["MemoryGiB"]) if row.get("MemoryGiB") else None)
            offers = RowOffers()  # a bad on-demand price must not take the row's valid spot price with it
            if row["Price"]:  # empty: spot-only shape; zero or negative: rejected by make_offer, counted
                offers.add(lambda: make_offer(self.name, self.provider, allocation=allocation,
                                              price=number(self.name, row["Price"], "Price"), **common))
            # empty or 0: SkyPilot's marker for "no spot market" (every row of its Vast catalog); negative: rejected
            if row.get("SpotPrice") and number(self.name, row["SpotPrice"], "SpotPrice") != 0:
                offers.add(lambda: make_offer(self.name, self.provider, allocation="spot",
                                              price=number(self.name, row["SpotPrice"], "SpotPrice"), **common))
            return offers

        return collect(reader, build)


SOURCES = [SkyPilotCatalog(cloud) for cloud in CLOUDS]
