"""Verda (ex-DataCrunch): ``GET https://api.verda.com/v1/instance-types?currency=usd`` (unauthenticated per its
OpenAPI spec). Prices arrive as strings, per instance-hour; an empty on-demand price means spot-only.
``gpu_memory.size_in_gigabytes`` is the machine's total ("640GB GPU RAM" on an 8x H100): divided by the GPU count.
CPU-only types (``number_of_gpus`` 0) are counted as ignored."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx

from pipeline.sources.base import (
    NOT_OFFERED,
    Ignored,
    ParseError,
    ParseResult,
    RawPayload,
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

NOT_OFFERED_HERE = Ignored(NOT_OFFERED)

URL = "https://api.verda.com/v1/instance-types?currency=usd"


class Verda(Source):
    name = provider = "verda"
    endpoint = URL
    unit = "USD per instance-hour (strings)"

    def fetch(self, client: httpx.Client) -> RawPayload:
        return RawPayload(source=self.name, fetched_at=datetime.now(UTC), parts=(self.get(client, URL),))

    def parse_payload(self, raw: RawPayload, rates: FxRates | None) -> ParseResult:
        items = json_body(self.name, raw.parts[0])
        if not isinstance(items, list):
            raise ParseError(self.name, "body", "expected a list of instance types")

        def build(item):  # type: ignore[no-untyped-def]
            gpu = item.get("gpu") or {}
            count = gpu.get("number_of_gpus") or 0
            if not count:
                return None
            memory = (item.get("gpu_memory") or {}).get("size_in_gigabytes")
            common = dict(instance_type=field(self.name, item, "instance_type"), gpu_name=field(self.name, item, "model"),
                          gpu_count=count, unit="instance-hour", currency=str(item.get("currency", "usd")),
                          observed_at=raw.fetched_at, rates=rates, resolve=resolve,
                          memory_gb=number(self.name, memory, "gpu_memory.size_in_gigabytes") / count if memory else None,
                          vcpus=(item.get("cpu") or {}).get("number_of_cores"),
                          ram_gb=(item.get("memory") or {}).get("size_in_gigabytes"))
            offers = []
            # empty: a spot-only type; "0", "0.0" or 0: not offered that way (skipped, not rejected)
            if (price := listed_price(self.name, item.get("price_per_hour"), "price_per_hour")) is not None:
                offers.append(make_offer(self.name, self.provider, allocation="on_demand", price=price, **common))
            if (spot := listed_price(self.name, item.get("spot_price"), "spot_price")) is not None:
                offers.append(make_offer(self.name, self.provider, allocation="spot", price=spot, **common))
            return offers or NOT_OFFERED_HERE

        return collect(items, build)
