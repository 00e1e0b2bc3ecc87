"""Vultr: ``GET /v2/plans`` (Cloud GPU, ``vcg``) and ``/v2/plans-metal`` (no key to read), cursor-paged.

USD per instance-hour; ``location_cost`` overrides the price per location; ``gpu_count`` may be a fraction
string such as "1/20" (a vGPU slice). Bare-metal GPU plans omit their GPUs: ``METAL_GPUS`` (after sc-crawler's
``_DEDICATED_METAL_GPU_PLANS``) supplies them; an unknown metal GPU plan is rejected, never guessed.
"""

from __future__ import annotations

from datetime import UTC, datetime
from fractions import Fraction

import httpx

from pipeline.sources.base import (
    ParseResult,
    RawPayload,
    RowRejected,
    Source,
    collect,
    field,
    json_body,
    make_offer,
    number,
)
from pipeline.sources.fx import FxRates
from pipeline.sources.gpu_names import resolve

PLANS = "https://api.vultr.com/v2/plans?per_page=500"
METAL = "https://api.vultr.com/v2/plans-metal?per_page=500"
METAL_GPUS = {
    "vcg-h100-216c-1914gb-640vram": ("H100", 8), "vcg-a100-96c-896g-320vram": ("A100-80GB", 4),
    "vcg-b200-248c-2826g-1536vram": ("B200", 8), "vcg-mi325x-252c-2872g-1536vram": ("MI325X", 6),
    "vcg-mi355x-252c-2872g-2304vram": ("MI355X", 8), "vcg-a16-96c-878g-256vram": ("A16", 16),
}
GPU_TYPES = {"NVIDIA_A100_PCIE": "A100 PCIE", "NVIDIA_A100_SXM": "A100-80GB", "AMD_MI300X": "MI300X"}


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

    def parse_payload(self, raw: RawPayload, rates: FxRates | None) -> ParseResult:
        plans = []
        for part in raw.parts:
            body = json_body(self.name, part)
            plans += body.get("plans") or body.get("plans_metal") or []

        def build(plan):  # type: ignore[no-untyped-def]
            plan_id = field(self.name, plan, "id")
            if plan.get("gpu_type"):
                raw_type = str(plan["gpu_type"])
                gpu = GPU_TYPES.get(raw_type, raw_type.split("_", 1)[-1])
                count = float(Fraction(str(plan.get("gpu_count", 1))))
                memory = plan.get("gpu_vram_gb")
                memory = memory / count if memory and count >= 1 else memory
            elif plan_id in METAL_GPUS:
                gpu, count = METAL_GPUS[plan_id]
                memory = None
            elif "gpu" in plan_id or plan_id.startswith("vcg") or plan.get("gpu_brand"):
                raise RowRejected(self.name, "gpu_type", f"{plan_id}: GPU plan without GPU facts (not in METAL_GPUS)")
            else:
                return None
            offers = []
            for loc in plan.get("locations") or [None]:
                cost = (plan.get("location_cost") or {}).get(loc, {}) if loc else {}
                common = dict(instance_type=plan_id, gpu_name=gpu, gpu_count=count, unit="instance-hour",
                              currency="USD", observed_at=raw.fetched_at, rates=rates, resolve=resolve, region=loc,
                              memory_gb=memory, vcpus=plan.get("vcpu_count") or plan.get("cpu_threads"),
                              ram_gb=plan["ram"] / 1024 if plan.get("ram") else None)
                price = cost.get("hourly_cost", plan.get("hourly_cost"))
                offers.append(make_offer(self.name, self.provider, price=number(self.name, price, "hourly_cost"),
                                         allocation="on_demand", **common))
                spot = cost.get("hourly_cost_preemptible", plan.get("hourly_cost_preemptible"))
                if plan.get("deploy_preemptible") and spot:
                    offers.append(make_offer(self.name, self.provider, price=number(self.name, spot, "preemptible"),
                                             allocation="spot", **common))
            return offers

        return collect(plans, build)
