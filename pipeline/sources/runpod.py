"""RunPod: GraphQL ``gpuTypes`` (``RUNPOD_API_KEY``). Prices are per GPU-hour; Secure Cloud and Community Cloud
are separate offers; spot = the interruptible price. A pod of n GPUs costs n x the per-GPU price, so offers are
written for every GPU count the type allows (1, 2, 4, 8 up to ``maxGpuCount``). GraphQL errors come with
HTTP 200 in ``errors``: a ParseError naming them. ``memoryInGb`` is per GPU. A type with ``secureCloud`` or
``communityCloud`` false gets no offer on that cloud, and a price of 0 means the same ("not offered there":
skipped, never a rejected row); types without any price are counted as ignored.

MIG slices (``PRO 6000 MIG 24GB``, id ``... Server Edition MIG 1g.24gb``, ``memoryInGb`` 24) are a share of one
card, never whole GPUs: they map on the card the name gives (a 96 GB RTX PRO 6000), with ``gpu_share`` = slice
memory / card memory (0.25, 0.5) and a price per slice. ``lowestPrice.stockStatus`` (High, Medium, Low) and
``availableGpuCounts`` (the pod sizes rentable now) are the availability at fetch time."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx

from pipeline.sources.base import (
    Ignored,
    ParseError,
    ParseResult,
    RawPayload,
    RowOffers,
    RowRejected,
    Source,
    collect,
    field,
    json_body,
    listed_price,
    make_offer,
)
from pipeline.sources.fx import FxRates
from pipeline.sources.gpu_names import mig_slice, resolve, slice_of

URL = "https://api.runpod.io/graphql"
NO_PRICE = Ignored("no price on either cloud")
#: lowestPrice.stockStatus -> availability at fetch time (other values are drift: offer_facts keeps them as stated)
STOCK = {"High": "available", "Medium": "available", "Low": "low"}
QUERY = ("query { gpuTypes { id displayName manufacturer memoryInGb maxGpuCount secureCloud communityCloud "
         "securePrice communityPrice secureSpotPrice communitySpotPrice "
         "lowestPrice(input:{gpuCount:1}) { stockStatus availableGpuCounts } } }")


class RunPod(Source):
    name = provider = "runpod"
    auth = "API key (RUNPOD_API_KEY)"
    key_env = ("RUNPOD_API_KEY",)
    endpoint = URL
    unit = "USD per GPU-hour"
    known_enums = {"stockStatus": tuple(STOCK)}

    def enum_values(self, raw: RawPayload) -> dict[str, set[str]]:
        types = (json_body(self.name, raw.parts[0]).get("data") or {}).get("gpuTypes") or []
        return {"stockStatus": {str(s) for t in types if (s := (t.get("lowestPrice") or {}).get("stockStatus"))}}

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
            lowest = t.get("lowestPrice") or {}
            stock, rentable = lowest.get("stockStatus"), lowest.get("availableGpuCounts")
            share, card = 1.0, None
            parent = mig_slice(name) or mig_slice(str(t.get("id") or ""))
            if parent is not None:  # a MIG slice: a share of one card, priced per slice
                sliced = slice_of(self.provider, parent[0], float(t.get("memoryInGb") or parent[1]))
                if sliced is None:
                    raise RowRejected(self.name, "displayName", f"{name}: a MIG slice of a card not in the GPU map "
                                                                f"({parent[0]!r}): its share cannot be sized")
                _, share, card = sliced
            offers = RowOffers()  # one bad price rejects that offer only, counted
            for cloud, price_key, spot_key in (("SECURE", "securePrice", "secureSpotPrice"),
                                               ("COMMUNITY", "communityPrice", "communitySpotPrice")):
                if t.get(f"{cloud.lower()}Cloud") is False:
                    continue  # not offered on that cloud: its price fields are leftovers
                for count in counts:
                    status = STOCK.get(stock) if stock else None
                    if isinstance(rentable, list) and count not in rentable:
                        status = "unavailable"  # this pod size could not be rented at fetch time
                    common = dict(instance_type=f"{count}x_{name.replace(' ', '-')}_{cloud}", gpu_name=name,
                                  gpu_count=count * share, gpu_share=share, priced_units=count,
                                  map_name=parent[0] if parent else None, parent_memory_gb=card,
                                  unit="gpu-hour", currency="USD", observed_at=raw.fetched_at,
                                  rates=rates, resolve=resolve, memory_gb=t.get("memoryInGb"), availability=stock,
                                  availability_status=status)
                    for allocation, key in (("on_demand", price_key), ("spot", spot_key)):
                        price = listed_price(self.name, t.get(key), key)  # None or 0: not offered on that cloud
                        if price is not None:  # negative: rejected and counted
                            offers.add(lambda a=allocation, p=price, c=common: make_offer(
                                self.name, self.provider, allocation=a, price=p, **c))
                        elif t.get(key) is not None:
                            offers.not_offered += 1  # an explicit 0: counted as ignored, never rejected
            return offers if offers.offers or offers.rejected else NO_PRICE

        return collect(types, build)
