"""Lambda: ``GET https://cloud.lambda.ai/api/v1/instance-types`` (``LAMBDA_API_KEY``).

Cents per instance-hour, one price for every region; ``regions_with_capacity_available`` is live capacity (an
offer per region with capacity, or one region-less offer marked "no capacity"). GPU count and name come from
``specs.gpus`` or the name pattern ``gpu_{n}x_{gpu}_...``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

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
)
from pipeline.sources.fx import FxRates
from pipeline.sources.gpu_names import resolve

URL = "https://cloud.lambda.ai/api/v1/instance-types"
NAME = re.compile(r"^gpu_(\d+)x_([a-z0-9]+)")


class LambdaCloud(Source):
    name = "lambda"
    provider = "lambda"
    auth = "API key (LAMBDA_API_KEY)"
    key_env = ("LAMBDA_API_KEY",)
    endpoint = URL
    unit = "US cents per instance-hour"

    def fetch(self, client: httpx.Client) -> RawPayload:
        headers = self.bearer_headers()
        return RawPayload(source=self.name, fetched_at=datetime.now(UTC), parts=(self.get(client, URL, headers=headers),))

    def parse_payload(self, raw: RawPayload, rates: FxRates | None) -> ParseResult:
        data = field(self.name, json_body(self.name, raw.parts[0]), "data")

        def build(entry):  # type: ignore[no-untyped-def]
            itype = field(self.name, entry, "instance_type")
            name = field(self.name, itype, "name")
            m = NAME.match(name)
            if not m:
                raise ParseError(self.name, "instance_type.name", f"{name!r} does not follow gpu_<n>x_<gpu>")
            count = (itype.get("specs") or {}).get("gpus") or int(m.group(1))
            cents = field(self.name, itype, "price_cents_per_hour")
            regions = [r.get("name") for r in entry.get("regions_with_capacity_available") or []] or [None]
            return [make_offer(self.name, self.provider, instance_type=name, gpu_name=m.group(2).upper(),
                               gpu_count=count, price=cents / 100, unit="instance-hour", unit_scale="cents",
                               currency="USD", allocation="on_demand", observed_at=raw.fetched_at, rates=rates,
                               resolve=resolve, region=region,
                               availability="capacity" if region else "no capacity")
                    for region in regions]

        return collect(data.values(), build)
