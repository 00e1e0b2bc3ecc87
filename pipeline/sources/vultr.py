"""Vultr: ``GET /v2/plans`` (Cloud GPU, ``vcg``) and ``/v2/plans-metal`` (no key to read), cursor-paged.

USD per instance-hour; ``location_cost`` overrides the price per location. What the real API sends (sc-crawler's
``_vultr.py``, dstackai/gpuhunt's tests):

- CPU plans carry ``gpu_brand: "none"`` (or nothing): counted as ignored, never "rejected".
- ``gpu_vram_gb`` is the plan's total: a VM plan (``vcg``) is a *slice* of one card (vcg-a100-1c-6g-4vram = 4 GB
  of an A100 80GB) or several whole cards. ``gpu_count`` may be an int, a string ("2"), a fraction ("1/20") or
  missing; when missing it is the plan's memory over the card's (``CARD_MEMORY_GB``). A slice is kept as a
  fractional offer: ``gpu_count`` = ``gpu_share`` = its share, ``gpu_memory_gb`` = the slice's memory, mapped on
  the parent card's memory (a 40 GB half of an A100 80GB is not an A100 40GB).
- Dedicated-metal plans (``vdm`` in ``/v2/plans``) omit their GPUs: ``METAL_GPUS`` (after sc-crawler's
  ``_DEDICATED_METAL_GPU_PLANS``) supplies them. Bare-metal machines (``/v2/plans-metal``) name them in the id
  (``vbm-112c-2048gb-8-h100-gpu``) or in ``gpu_count``/``gpu_vram_gb``; metal plans without a GPU are ignored.
- ``deploy_ondemand: false`` means not rentable on demand (no on-demand offer); a plan without locations is not
  deployable anywhere (ignored).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from fractions import Fraction

import httpx

from pipeline.sources.base import (
    NOT_A_GPU_OFFER,
    Ignored,
    ParseError,
    ParseResult,
    RawPayload,
    RowRejected,
    Source,
    collect,
    field,
    json_body,
    listed_price,
    make_offer,
    number,
)
from pipeline.sources.fx import FxRates
from pipeline.sources.gpu_names import resolve

NOT_DEPLOYABLE = Ignored("not deployable (no location, or neither on-demand nor spot)")

PLANS = "https://api.vultr.com/v2/plans?per_page=500"
METAL = "https://api.vultr.com/v2/plans-metal?per_page=500"
METAL_GPUS = {
    "vcg-h100-216c-1914gb-640vram": ("H100", 8), "vcg-a100-96c-896g-320vram": ("A100-80GB", 4),
    "vcg-b200-248c-2826g-1536vram": ("B200", 8), "vcg-mi325x-252c-2872g-1536vram": ("MI325X", 6),
    "vcg-mi355x-252c-2872g-2304vram": ("MI355X", 8), "vcg-a16-96c-878g-256vram": ("A16", 16),
    "vcg-a40-24c-120g-48vram": ("A40", 1),
}
#: gpu_type -> name for the GPU map
GPU_TYPES = {"NVIDIA_A100": "A100 PCIE", "NVIDIA_A100_PCIE": "A100 PCIE", "NVIDIA_A100_SXM": "A100-80GB",
             "AMD_MI300X": "MI300X", "NVIDIA_GH200": "GH200"}
#: gpu_type -> memory of one whole card in GB (Vultr's Cloud GPU A100 is the 80 GB card, sliced 1/20 .. 1/1)
CARD_MEMORY_GB = {"NVIDIA_A100": 80, "NVIDIA_A100_PCIE": 80, "NVIDIA_A100_SXM": 80, "NVIDIA_A16": 16,
                  "NVIDIA_A40": 48, "NVIDIA_L40S": 48, "NVIDIA_H100": 80, "NVIDIA_H200": 141, "NVIDIA_GH200": 96,
                  "NVIDIA_B200": 192, "AMD_MI300X": 192, "AMD_MI325X": 256, "AMD_MI355X": 288}
METAL_ID = re.compile(r"-(\d+)-([a-z0-9]+)-gpu$", re.I)  # vbm-112c-2048gb-8-h100-gpu -> 8 x H100
NO_GPU_BRANDS = ("", "none", "null")
VRAM_IN_ID = re.compile(r"-(\d+)vram$")


def card_memory(name: str) -> float | None:
    """Whole-card memory of a GPU named in a bare-metal plan id (h100 -> NVIDIA_H100 -> 80)."""
    return CARD_MEMORY_GB.get(f"NVIDIA_{name}") or CARD_MEMORY_GB.get(f"AMD_{name}")


def gpu_count_of(source: str, value: object) -> float:
    """``gpu_count`` as sent: 1, "2", "1/20"."""
    try:
        return float(Fraction(str(value).strip()))
    except (ValueError, ZeroDivisionError):
        raise ParseError(source, "gpu_count", f"expected a count or a fraction, got {value!r}") from None


class Vultr(Source):
    name = provider = "vultr"
    endpoint = PLANS
    unit = "USD per instance-hour"

    def fetch(self, client: httpx.Client) -> RawPayload:
        parts = []
        for url in (PLANS, METAL):
            next_url: str | None = url
            while next_url and len(parts) < 40:
                part = self.get(client, next_url)
                parts.append(part)
                cursor = ((json_body(self.name, part).get("meta") or {}).get("links") or {}).get("next")
                next_url = f"{url}&cursor={cursor}" if cursor else None
        return RawPayload(source=self.name, fetched_at=datetime.now(UTC), parts=tuple(parts))

    def gpus(self, plan: dict) -> tuple[str, float, float | None, float | None] | None:
        """(GPU name, GPU-equivalents, memory per device, memory of the whole card) or None for a CPU plan."""
        plan_id = str(field(self.name, plan, "id"))
        raw_type = plan.get("gpu_type")
        total = plan.get("gpu_vram_gb")
        total = number(self.name, total, "gpu_vram_gb") if total not in (None, "", 0) else None
        count = gpu_count_of(self.name, plan["gpu_count"]) if plan.get("gpu_count") not in (None, "", 0) else None
        if raw_type:
            raw_type = str(raw_type)
            name = GPU_TYPES.get(raw_type, raw_type.split("_", 1)[-1])
            card = CARD_MEMORY_GB.get(raw_type)
        elif plan_id in METAL_GPUS:
            name, count = METAL_GPUS[plan_id]
            vram = VRAM_IN_ID.search(plan_id)  # vcg-h100-216c-1914gb-640vram: 640 GB for the machine
            total = total or (float(vram.group(1)) if vram else None)
            card = None
        elif m := METAL_ID.search(plan_id):
            name, count = m.group(2).upper(), count or int(m.group(1))
            card = None if total else card_memory(name)  # whole cards of the named GPU (A100 metal: 80 GB)
        elif str(plan.get("gpu_brand") or "").strip().lower() in NO_GPU_BRANDS and not count and not total:
            return None
        else:
            raise RowRejected(self.name, "gpu_type", f"{plan_id}: GPU plan without GPU facts (not in METAL_GPUS)")
        if count is None:
            count = total / card if total and card else 1.0
        if count < 1:  # a slice of one card: memory = the slice, the card's memory is what maps it
            return name, count, total, card or (total / count if total else None)
        return name, count, total / count if total else card, None  # whole cards: memory per GPU

    def parse_payload(self, raw: RawPayload, rates: FxRates | None) -> ParseResult:
        plans = []
        for part in raw.parts:
            body = json_body(self.name, part)
            plans += body.get("plans") or body.get("plans_metal") or []

        def build(plan):  # type: ignore[no-untyped-def]
            gpus = self.gpus(plan)
            if gpus is None:
                return NOT_A_GPU_OFFER
            gpu, count, memory, card = gpus
            locations = [loc for loc in plan.get("locations") or [] if loc]
            if not locations:
                return NOT_DEPLOYABLE
            offers = []
            for loc in locations:
                cost = (plan.get("location_cost") or {}).get(loc, {})
                common = dict(instance_type=plan["id"], gpu_name=gpu, gpu_count=count, unit="instance-hour",
                              currency="USD", observed_at=raw.fetched_at, rates=rates, resolve=resolve, region=loc,
                              memory_gb=memory, parent_memory_gb=card, gpu_share=min(count, 1.0),
                              vcpus=plan.get("vcpu_count") or plan.get("cpu_threads"),
                              ram_gb=plan["ram"] / 1024 if plan.get("ram") else None)
                price = listed_price(self.name, cost.get("hourly_cost", plan.get("hourly_cost")), "hourly_cost")
                if plan.get("deploy_ondemand", True) is not False and price is not None:  # 0: not offered
                    offers.append(make_offer(self.name, self.provider, price=price, allocation="on_demand", **common))
                spot = listed_price(self.name, cost.get("hourly_cost_preemptible",
                                                        plan.get("hourly_cost_preemptible")), "preemptible")
                if plan.get("deploy_preemptible") and spot is not None:
                    offers.append(make_offer(self.name, self.provider, price=spot, allocation="spot", **common))
            return offers or NOT_DEPLOYABLE

        return collect(plans, build)
