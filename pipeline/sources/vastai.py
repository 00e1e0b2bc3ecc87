"""Vast.ai marketplace offers: ``GET /api/v0/bundles/`` with a JSON query (``VAST_API_KEY``).

One row per host offer: ``dph_total`` is $/h for the whole offer (divide by ``num_gpus``), ``min_bid`` the
interruptible floor; ``gpu_ram`` is MiB per GPU; ``gpu_frac`` < 1 marks a share of a host. Marketplace prices
are kept as ``marketplace``, apart from on-demand clouds.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from urllib.parse import quote

import httpx

from pipeline.sources.base import (
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

QUERY = {"verified": {"eq": True}, "rentable": {"eq": True}, "rented": {"eq": False}, "type": "on-demand",
         "order": [["dph_total", "asc"]], "limit": 1000}
URL = "https://console.vast.ai/api/v0/bundles/?q=" + quote(json.dumps(QUERY, separators=(",", ":")))


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
                          parts=(self.get(client, URL, headers=headers),))

    def parse_payload(self, raw: RawPayload, rates: FxRates | None) -> ParseResult:
        body = json_body(self.name, raw.parts[0])
        if isinstance(body, dict) and body.get("success") is False:
            raise ParseError(self.name, "error", f"{body.get('error')}: {body.get('msg')}")
        offers = field(self.name, body, "offers")

        def build(o):  # type: ignore[no-untyped-def]
            count = number(self.name, field(self.name, o, "num_gpus"), "num_gpus")
            frac = float(o.get("gpu_frac") or 1.0)
            common = dict(instance_type=f"vast-{field(self.name, o, 'id')}", gpu_name=field(self.name, o, "gpu_name"),
                          gpu_count=count, unit="instance-hour", currency="USD", observed_at=raw.fetched_at,
                          rates=rates, resolve=resolve, region=o.get("geolocation"),
                          memory_gb=o["gpu_ram"] / 1024 if o.get("gpu_ram") else None,
                          vcpus=o.get("cpu_cores_effective"), ram_gb=o["cpu_ram"] / 1024 if o.get("cpu_ram") else None,
                          fractional=frac < 1, availability="rentable" if o.get("rentable", True) else "rented")
            out = [make_offer(self.name, self.provider, allocation="marketplace",
                              price=number(self.name, field(self.name, o, "dph_total"), "dph_total"), **common)]
            if o.get("min_bid"):
                out.append(make_offer(self.name, self.provider, allocation="spot",
                                      price=number(self.name, o["min_bid"], "min_bid"), **common))
            return out

        return collect(offers, build)
