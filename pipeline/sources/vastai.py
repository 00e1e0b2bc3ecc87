"""Vast.ai marketplace offers: ``GET /api/v0/bundles/`` with a JSON query (``VAST_API_KEY``).

One row per host offer: ``dph_total`` is $/h for the whole offer (divide by ``num_gpus``), ``min_bid`` the
interruptible floor; ``gpu_ram`` is MiB per GPU (``gpu_total_ram`` the offer's total). ``gpu_frac`` is the offer's
share of its *machine* (1 of 4 GPUs = 0.25), not a fraction of a GPU: Vast rents whole GPUs, so no offer is
fractional. Marketplace prices (host-set) are kept as ``marketplace``, apart from on-demand clouds.

The search answers a few dozen offers per query, cheapest first, so one query sees only the bottom of the market:
the fetch sends one query per GPU name in ``GPU_NAMES`` plus one unfiltered query, without a ``verified`` filter
(which drops most hosts), and the parse keeps each offer id once.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from urllib.parse import quote

import httpx

from pipeline.sources.base import (
    NOT_A_GPU_OFFER,
    ParseError,
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

BASE = "https://console.vast.ai/api/v0/bundles/?q="
QUERY = {"rentable": {"eq": True}, "rented": {"eq": False}, "type": "on-demand", "order": [["dph_total", "asc"]],
         "limit": 1000}
#: Vast's own gpu_name spellings of the cards worth covering one by one
GPU_NAMES = ("RTX 3090", "RTX 4090", "RTX 5090", "RTX A6000", "RTX 6000Ada", "RTX PRO 6000 WS", "RTX PRO 6000 S",
             "A40", "L40", "L40S", "A100 PCIE", "A100 SXM4", "A100X", "H100 PCIE", "H100 SXM", "H100 NVL", "H200",
             "H200 NVL", "B200", "Tesla V100", "A10", "L4")


def query_url(gpu_name: str | None = None) -> str:
    query = QUERY | ({"gpu_name": {"eq": gpu_name}} if gpu_name else {})
    return BASE + quote(json.dumps(query, separators=(",", ":")))


URL = query_url()
URLS = (URL, *(query_url(name) for name in GPU_NAMES))


class VastAI(Source):
    name = "vastai"
    provider = "vast"
    auth = "API key (VAST_API_KEY)"
    key_env = ("VAST_API_KEY",)
    endpoint = "https://console.vast.ai/api/v0/bundles/"
    unit = "USD per offer-hour"

    def fetch(self, client: httpx.Client) -> RawPayload:
        headers = self.bearer_headers()
        return RawPayload(source=self.name, fetched_at=datetime.now(UTC),
                          parts=tuple(self.get(client, url, headers=headers) for url in URLS))

    def parse_payload(self, raw: RawPayload, rates: FxRates | None) -> ParseResult:
        offers, seen = [], set()
        for part in raw.parts:
            body = json_body(self.name, part)
            if isinstance(body, dict) and body.get("success") is False:
                raise ParseError(self.name, "error", f"{body.get('error')}: {body.get('msg')}")
            for o in field(self.name, body, "offers"):
                key = field(self.name, o, "id")
                if key not in seen:  # the same offer answers the unfiltered and its GPU's query
                    seen.add(key)
                    offers.append(o)

        def build(o):  # type: ignore[no-untyped-def]
            count = number(self.name, field(self.name, o, "num_gpus"), "num_gpus")
            if not count:
                return NOT_A_GPU_OFFER
            common = dict(instance_type=f"vast-{field(self.name, o, 'id')}", gpu_name=field(self.name, o, "gpu_name"),
                          gpu_count=count, unit="instance-hour", currency="USD", observed_at=raw.fetched_at,
                          rates=rates, resolve=resolve, region=o.get("geolocation"),
                          memory_gb=per_gpu_memory_gb(o, count),
                          vcpus=o.get("cpu_cores_effective"), ram_gb=o["cpu_ram"] / 1024 if o.get("cpu_ram") else None,
                          fractional=False, availability="rentable" if o.get("rentable", True) else "rented",
                          availability_status="available" if o.get("rentable", True) else "unavailable",
                          available_count=int(count) if o.get("rentable", True) else 0)
            out = [make_offer(self.name, self.provider, allocation="marketplace",
                              price=number(self.name, field(self.name, o, "dph_total"), "dph_total"), **common)]
            if o.get("min_bid"):
                out.append(make_offer(self.name, self.provider, allocation="spot",
                                      price=number(self.name, o["min_bid"], "min_bid"), **common))
            return out

        return collect(offers, build)


def per_gpu_memory_gb(offer: dict, count: float) -> float | None:
    """``gpu_ram`` is MiB per GPU; when it equals ``gpu_total_ram`` on a multi-GPU offer it is the total."""
    per, total = offer.get("gpu_ram"), offer.get("gpu_total_ram")
    if not per:
        return total / 1024 / count if total else None
    if total and count > 1 and per == total:
        return per / 1024 / count
    return per / 1024
