"""OVHcloud Public Cloud: ``GET https://eu.api.ovh.com/1.0/order/catalog/public/cloud?ovhSubsidiary=IE`` (public).

Hourly plans end in ``.consumption`` (``.consumption.3AZ`` / ``.consumption.LZ.*`` are regional variants,
counted as ignored); prices are integers in 1e-8 currency units (sc-crawler's MICROCENTS);
currency follows the subsidiary (EUR for IE). The GPU count comes from ``blobs.technical.gpu.number``; whether
``gpu.memory.size`` is per GPU or the flavor's total is not documented, so it is read per GPU when the GPU map
accepts that and divided by the count otherwise (``gpu_names.per_gpu_memory``). Non-GPU flavors and monthly plans
are counted as ignored.
"""

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
from pipeline.sources.gpu_names import per_gpu_memory, resolve

URL = "https://eu.api.ovh.com/1.0/order/catalog/public/cloud?ovhSubsidiary=IE"
UNITS_PER_CURRENCY = 100_000_000
MONTHLY_PLAN = Ignored("monthly plan of an hourly flavor (the .consumption plan is kept)")
#: ``<flavor>.consumption.3AZ`` (3-AZ regions) and ``<flavor>.consumption.LZ.<area>`` (Local Zones) price the same
#: flavor elsewhere; the catalog carries no region for them, so only the plain plan is read (a genuine DE
#: catalog lists them beside the plain plans; they are regional variants, not monthly plans)
VARIANT_PLAN = Ignored("regional variant of an hourly plan (.consumption.3AZ / .consumption.LZ.*): the plain "
                       ".consumption plan is kept")


class OVHcloud(Source):
    name = "ovh"
    provider = "ovhcloud"
    endpoint = URL
    unit = "1e-8 EUR per instance-hour"

    def fetch(self, client: httpx.Client) -> RawPayload:
        return RawPayload(source=self.name, fetched_at=datetime.now(UTC), parts=(self.get(client, URL),))

    def parse_payload(self, raw: RawPayload, rates: FxRates | None) -> ParseResult:
        body = json_body(self.name, raw.parts[0])
        currency = field(self.name, body, "locale", "currencyCode")
        addons = field(self.name, body, "addons")

        def build(addon):  # type: ignore[no-untyped-def]
            plan = str(field(self.name, addon, "planCode"))
            gpu = ((addon.get("blobs") or {}).get("technical") or {}).get("gpu")
            if not gpu:
                return None
            if ".consumption." in plan:
                return VARIANT_PLAN
            if not plan.endswith(".consumption"):
                return MONTHLY_PLAN
            pricings = field(self.name, addon, "pricings")
            hourly = [p for p in pricings if p.get("intervalUnit") == "hour" or p.get("type") == "consumption"]
            pricing = hourly[0] if hourly else field(self.name, addon, "pricings", 0)
            tech = addon["blobs"]["technical"]
            name = field(self.name, gpu, "model")
            count = number(self.name, gpu.get("number"), "gpu.number")
            memory = per_gpu_memory(self.provider, str(name), plan, (gpu.get("memory") or {}).get("size"), count)
            return make_offer(self.name, self.provider, instance_type=addon.get("invoiceName") or plan,
                              gpu_name=name, gpu_count=count,
                              price=number(self.name, field(self.name, pricing, "price"), "price") / UNITS_PER_CURRENCY,
                              unit="instance-hour", unit_scale="1e-8", currency=currency, allocation="on_demand",
                              observed_at=raw.fetched_at, rates=rates, resolve=resolve,
                              memory_gb=memory,
                              vcpus=(tech.get("cpu") or {}).get("cores"), ram_gb=(tech.get("memory") or {}).get("size"))

        return collect(addons, build)
