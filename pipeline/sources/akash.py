"""Akash Network: ``GET https://console-api.akash.network/v1/gpu-prices`` (no key).

Prices are USD per GPU-hour statistics of on-chain bids (min/max/avg/weightedAverage/median over ~31 days), not a
list price: we publish the median as ``bid_statistics``, kept apart from on-demand prices.
"""

from __future__ import annotations

from datetime import UTC, datetime

import httpx

from pipeline.sources.base import (
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

URL = "https://console-api.akash.network/v1/gpu-prices"


class Akash(Source):
    name = provider = "akash"
    endpoint = URL
    unit = "USD per GPU-hour (median of bids)"

    def fetch(self, client: httpx.Client) -> RawPayload:
        return RawPayload(source=self.name, fetched_at=datetime.now(UTC), parts=(self.get(client, URL),))

    def parse_payload(self, raw: RawPayload, rates: FxRates | None) -> ParseResult:
        models = field(self.name, json_body(self.name, raw.parts[0]), "models")

        def build(m):  # type: ignore[no-untyped-def]
            price = field(self.name, m, "price")
            ram = str(m.get("ram", ""))
            memory = float(ram.removesuffix("Gi")) * 2**30 / 1e9 if ram.endswith("Gi") else None
            avail = m.get("availability") or {}
            return make_offer(self.name, self.provider,
                              instance_type=f"{m.get('vendor')}-{field(self.name, m, 'model')}-{ram}-{m.get('interface')}",
                              gpu_name=str(m["model"]).upper(), gpu_count=1,
                              price=number(self.name, field(self.name, price, "med"), "price.med"), unit="gpu-hour",
                              currency=str(price.get("currency", "USD")), allocation="bid_statistics",
                              observed_at=raw.fetched_at, rates=rates, resolve=resolve,
                              memory_gb=round(memory) if memory else None,
                              availability=f"{avail.get('available')}/{avail.get('total')} GPUs free" if avail else None,
                              **free_gpus(avail))

        return collect(models, build)


def free_gpus(avail: dict) -> dict:
    """``availability {total, available}`` as a status and a count of free GPUs (none when the model omits it)."""
    free = avail.get("available")
    if not isinstance(free, int | float) or isinstance(free, bool) or free < 0:
        return {}
    return {"availability_status": "available" if free > 0 else "unavailable", "available_count": int(free)}
