"""RunPod: GraphQL ``gpuTypes`` (``RUNPOD_API_KEY``). Prices are per GPU-hour; Secure Cloud and Community Cloud
are separate offers; spot = the interruptible price. A pod of n GPUs costs n x the per-GPU price, so offers are
written for every GPU count the type allows (1, 2, 4, 8 up to ``maxGpuCount``). GraphQL errors come with
HTTP 200 in ``errors``: a ParseError naming them. ``memoryInGb`` is per GPU. A type with ``secureCloud`` or
``communityCloud`` false gets no offer on that cloud; types without any price are counted as ignored."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx

from pipeline.sources.base import (
    Ignored,
    ParseError,
    ParseResult,
    RawPayload,
    RowOffers,
    Source,
    collect,
    field,
    json_body,
    make_offer,
    number,
)
from pipeline.sources.fx import FxRates
from pipeline.sources.gpu_names import resolve

URL = "https://api.runpod.io/graphql"
NO_PRICE = Ignored("no price on either cloud")
QUERY = ("query { gpuTypes { id displayName manufacturer memoryInGb maxGpuCount secureCloud communityCloud "
         "securePrice communityPrice secureSpotPrice communitySpotPrice "
         "lowestPrice(input:{gpuCount:1}) { stockStatus availableGpuCounts } } }")


class RunPod(Source):
    name = provider = "runpod"
    auth = "API key (RUNPOD_API_KEY)"
    key_env = ("RUNPOD_API_KEY",)
    endpoint = URL
    unit = "USD per GPU-hour"

    def fetch(self, client: httpx.Client) -> RawPayload:
        part = self.get(client, URL, method="POST", json={"query": QUERY}, headers=self.bearer_headers())
        return RawPayload(source=self.name, fetched_at=datetime.now(UTC), parts=(part,))

    def parse_payload(self, raw: RawPayload, rates: FxRates | None) -> ParseResult:
        body = json_body(self.name, raw.parts[0])
        if body.get("errors"):
            raise ParseError(self.name, "errors", str(body["errors"])[:300])
        types = field(self.name, body, "data", "gpuTypes")

        def build(t):  # type: ignore[no-untyped-def]
            name = field(self.name, t, "displayName")
            max_count = int(t.get("maxGpuCount") or 1)
            counts = [c for c in (1, 2, 4, 8) if c <= max_count]
            stock = (t.get("lowestPrice") or {}).get("stockStatus")
            offers = RowOffers()  # one bad price rejects that offer only, counted (issue #16)
            for cloud, price_key, spot_key in (("SECURE", "securePrice", "secureSpotPrice"),
                                               ("COMMUNITY", "communityPrice", "communitySpotPrice")):
                if t.get(f"{cloud.lower()}Cloud") is False:
                    continue  # not offered on that cloud: its price fields are leftovers
                for count in counts:
                    common = dict(instance_type=f"{count}x_{name.replace(' ', '-')}_{cloud}", gpu_name=name,
                                  gpu_count=count, unit="gpu-hour", currency="USD", observed_at=raw.fetched_at,
                                  rates=rates, resolve=resolve, memory_gb=t.get("memoryInGb"), availability=stock)
                    for allocation, key in (("on_demand", price_key), ("spot", spot_key)):
                        if t.get(key) is not None:  # absent: not offered; 0 or negative: rejected and counted
                            offers.add(lambda a=allocation, k=key, c=common: make_offer(
                                self.name, self.provider, allocation=a, price=number(self.name, t[k], k), **c))
            return offers if offers.offers or offers.rejected else NO_PRICE

        return collect(types, build)
