"""DigitalOcean GPU Droplets: ``GET /v2/sizes`` (``DIGITALOCEAN_TOKEN``), paged by ``links.pages.next``.
USD per droplet-hour (whole 1x or 8x node); ``gpu_info`` gives count, model and the droplet's total VRAM
(``gpu-h100x8-640gb``: ``vram.amount`` 640 for 8 GPUs), divided by the count. Sizes without ``gpu_info`` (the
CPU droplets) are counted as ignored. A slug ending in ``-spot`` (``gpu-h100x1-80gb-spot``, as one public client's
canned sizes answer lists them beside the on-demand slugs) is an interruptible price: ``spot``, never on-demand."""

from __future__ import annotations

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
    number,
)
from pipeline.sources.fx import FxRates
from pipeline.sources.gpu_names import resolve

URL = "https://api.digitalocean.com/v2/sizes?per_page=200"
NOT_DEPLOYABLE = Ignored("no region offers the size")


class DigitalOcean(Source):
    name = provider = "digitalocean"
    auth = "API token (DIGITALOCEAN_TOKEN)"
    key_env = ("DIGITALOCEAN_TOKEN",)
    endpoint = URL
    unit = "USD per droplet-hour"

    def fetch(self, client: httpx.Client) -> RawPayload:
        headers = self.bearer_headers()
        parts, url = [], URL
        while url and len(parts) < 20:
            part = self.get(client, url, headers=headers)
            parts.append(part)
            url = ((json_body(self.name, part).get("links") or {}).get("pages") or {}).get("next")
        return RawPayload(source=self.name, fetched_at=datetime.now(UTC), parts=tuple(parts))

    def parse_payload(self, raw: RawPayload, rates: FxRates | None) -> ParseResult:
        sizes = [s for p in raw.parts for s in field(self.name, json_body(self.name, p), "sizes")]

        def build(size):  # type: ignore[no-untyped-def]
            gpu = size.get("gpu_info")
            if not gpu:
                return None
            count = number(self.name, field(self.name, gpu, "count"), "gpu_info.count")
            vram = gpu.get("vram") or {}
            total_gb = vram_gb(vram)
            model = str(field(self.name, gpu, "model")).removeprefix("nvidia_").removeprefix("amd_")
            common = dict(instance_type=field(self.name, size, "slug"), gpu_name=model.upper(),
                          gpu_count=count,
                          price=number(self.name, field(self.name, size, "price_hourly"), "price_hourly"),
                          unit="instance-hour", currency="USD",
                          allocation="spot" if str(size.get("slug", "")).endswith("-spot") else "on_demand",
                          observed_at=raw.fetched_at,
                          rates=rates, resolve=resolve, memory_gb=total_gb / count if total_gb and count else None,
                          vcpus=size.get("vcpus"), ram_gb=size["memory"] / 1024 if size.get("memory") else None,
                          availability="available" if size.get("available") else "unavailable",
                          availability_status="available" if size.get("available") else "unavailable")
            regions = [r for r in size.get("regions") or [] if r]
            if not regions:
                return NOT_DEPLOYABLE  # listed but rentable in no region
            return [make_offer(self.name, self.provider, region=r, **common) for r in regions]

        return collect(sizes, build)


def vram_gb(vram: dict) -> float | None:
    """``{"amount": 640, "unit": "gib"}`` in GB as listed (GiB and GB both read as the marketed number)."""
    amount = vram.get("amount")
    if not amount:
        return None
    unit = str(vram.get("unit") or "gib").lower()
    return float(amount) / 1024 if unit in ("mib", "mb") else float(amount)
