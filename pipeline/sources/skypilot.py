"""SkyPilot's catalog CSVs (skypilot-org/skypilot-catalog ``catalogs/v8/<cloud>/vms.csv``) as an aggregator:
one source per cloud, named ``skypilot-<cloud>``. Columns: InstanceType, AcceleratorName, AcceleratorCount,
vCPUs, MemoryGiB, GpuInfo, Price, SpotPrice, Region, AvailabilityZone; prices USD per instance-hour.

SkyPilot's Vast rows are medians of bucketed marketplace offers (``marketplace_median``); Lium's are host-set
marketplace prices (``marketplace``); RunPod's are per pod of the listed GPU count. GPU memory is read per GPU
(:func:`per_gpu_memory_gb`). Provider ids are the canonical ones of the direct sources (``oci`` for Oracle). Empty or zero prices mean "not offered" (e.g. spot-only shapes) and are skipped.
"""

from __future__ import annotations

import ast
import csv
import io
import threading
from functools import lru_cache
from typing import Any

import httpx

from pipeline.sources.base import (
    NOT_OFFERED,
    Ignored,
    ParseError,
    ParseResult,
    RawPayload,
    RowOffers,
    Source,
    collect,
    listed_price,
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


#: catalogs whose GpuInfo ``SizeInMiB`` is the machine's total, whatever ``Count`` says (Vast: 2x A100 40GB is
#: 81920 MiB, 8x V100 16GB 131072 MiB)
TOTAL_MEMORY_CLOUDS = ("vast",)
#: catalogs whose prices are host-set marketplace prices, not a provider's list price
MARKETPLACE_CLOUDS = {"vast": "marketplace_median", "lium": "marketplace"}
NOT_OFFERED_HERE = Ignored(NOT_OFFERED)


#: one ``ast.literal_eval`` at a time: CPython 3.11 keeps the AST constructor's recursion depth in per-interpreter
#: state, so two threads building ASTs at once can fail with "SystemError: AST constructor recursion depth mismatch"
#: (python/cpython#106905). The price sources parse in threads (``fetch_concurrently``); this failed the
#: skypilot-shadeform parse of one CI run ("before=48, after=43").
_LITERAL_EVAL = threading.Lock()


@lru_cache(maxsize=4096)
def _gpu_info(text: str) -> Any:  # noqa: ANN401 - a python literal of any shape
    """``GpuInfo`` parsed once per distinct text (a catalog repeats the same few hundred strings over
    thousands of rows). Callers only read the result."""
    with _LITERAL_EVAL:
        return ast.literal_eval(text)


def per_gpu_memory_gb(gpu_info: str, count: float, cloud: str = "", name: str = "", instance_type: str = "",
                      host_ram_gb: float | None = None) -> float | None:
    """Per-GPU memory in GB from SkyPilot's python-repr GpuInfo; None when absent or zero.

    The field means different things per catalog and per catalog version: per GPU in most, the machine's total in
    some (Vast; OCI and Lium rows in some versions; catalog versions that write 537,600 MiB for 2x B300 even where
    ``TotalGpuMemoryInMiB`` = Size x Count), GB instead of MiB in Shadeform (H100 ``SizeInMiB`` 80). So the figure
    is read several ways, most likely first, and the first reading the GPU map accepts for that name
    (``gpu_memory_bounds.csv``) wins: per GPU as listed, then the total divided by the count (first for catalogs
    known to list totals; the per-GPU reading first when Size x Count = Total), then the same figure read as GB
    (a GB total above 1024, e.g. 1128 for 8x H200). When no reading fits and the figure is the machine's host RAM
    (``MemoryGiB``, within 2%: a catalog version that wrote RAM into the GPU field), it is no GPU memory at all:
    None, and the card is named by its name alone. Otherwise the figure is kept as the old rule read it and the
    offer stays unmapped (reported), never mapped to a card that cannot have that memory.
    """
    try:
        info = _gpu_info(gpu_info)
        gpu = info["Gpus"][0]
        mib = float(gpu["MemoryInfo"]["SizeInMiB"])
    except (ValueError, SyntaxError, KeyError, IndexError, TypeError):
        return None
    if not mib:
        return None
    in_gb = mib < 1024  # Shadeform: the number is GB (80 for an H100), not MiB
    gb = mib if in_gb else mib / 1024
    if count <= 1:
        if resolve(cloud, name, instance_type, gb)[0] is None and _is_host_ram(gb, host_ram_gb):
            return None  # the machine's RAM written as GPU memory: not this card's figure
        return gb
    total = info.get("TotalGpuMemoryInMiB", gpu.get("TotalGpuMemoryInMiB"))
    per_gpu_first = total is not None and not in_gb and abs(float(total) - mib * count) < 1  # Size x Count = Total
    readings = [gb / count, gb] if cloud in TOTAL_MEMORY_CLOUDS else [gb, gb / count]
    if not in_gb:
        readings += [mib, mib / count]  # the number was GB after all
    for reading in readings:
        if resolve(cloud, name, instance_type, reading)[0] is not None:
            return reading
    if _is_host_ram(gb, host_ram_gb) or (not in_gb and _is_host_ram(mib, host_ram_gb)):
        return None
    return gb if per_gpu_first else gb / count


def _is_host_ram(figure: float, host_ram_gb: float | None) -> bool:
    return bool(host_ram_gb) and abs(figure - host_ram_gb) <= 0.02 * host_ram_gb  # type: ignore[operator]


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
        allocation = MARKETPLACE_CLOUDS.get(self.cloud, "on_demand")

        def build(row: dict[str, str]):  # type: ignore[no-untyped-def]
            if not row["AcceleratorName"] or not float(row.get("AcceleratorCount") or 0):
                return None
            count = number(self.name, row["AcceleratorCount"], "AcceleratorCount")
            common = dict(instance_type=row["InstanceType"], gpu_name=row["AcceleratorName"], gpu_count=count,
                          gpu_share=min(count, 1.0),
                          unit="instance-hour", currency="USD", observed_at=raw.fetched_at, rates=rates,
                          resolve=resolve, region=row["Region"] or None, zone=row.get("AvailabilityZone") or None,
                          memory_gb=per_gpu_memory_gb(row.get("GpuInfo", ""), count, self.provider,
                                                      row["AcceleratorName"], row["InstanceType"],
                                                      float(row["MemoryGiB"]) if row.get("MemoryGiB") else None),
                          vcpus=float(row["vCPUs"]) if row.get("vCPUs") else None,
                          ram_gb=float(row["MemoryGiB"]) if row.get("MemoryGiB") else None)
            offers = RowOffers()  # a bad on-demand price must not take the row's valid spot price with it
            # empty: a spot-only shape; 0: SkyPilot's marker for an unpriced shape (it fills 0 where the provider
            # lists no price) and for "no spot market" (every row of its Vast catalog): not offered, skipped;
            # negative: rejected by make_offer, counted
            price = listed_price(self.name, row["Price"], "Price")
            if price is not None:
                offers.add(lambda: make_offer(self.name, self.provider, allocation=allocation, price=price, **common))
            spot = listed_price(self.name, row.get("SpotPrice"), "SpotPrice")
            if spot is not None:
                offers.add(lambda: make_offer(self.name, self.provider, allocation="spot", price=spot, **common))
            return offers if offers.offers or offers.rejected else NOT_OFFERED_HERE

        return collect(reader, build)


SOURCES = [SkyPilotCatalog(cloud) for cloud in CLOUDS]
