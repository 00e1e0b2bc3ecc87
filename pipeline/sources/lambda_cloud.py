"""Lambda: ``GET https://cloud.lambda.ai/api/v1/instance-types`` (``LAMBDA_API_KEY``).

Cents per instance-hour, one price for every region; ``regions_with_capacity_available`` is live capacity (an
offer per region with capacity, or one region-less offer marked "no capacity"). GPU count and name come from
``specs.gpus`` or the name pattern ``gpu_{n}x_{gpu}_...``; per-GPU memory from ``gpu_description``
("A100 (80 GB SXM4)"). The list also holds CPU-only types (``cpu_4x_general``, ``specs.gpus`` 0,
``gpu_description`` "N/A"): they are counted as ignored, never a reason to abort the parse.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

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
)
from pipeline.sources.fx import FxRates
from pipeline.sources.gpu_names import resolve

URL = "https://cloud.lambda.ai/api/v1/instance-types"
NAME = re.compile(r"^gpu_(\d+)x_([a-z0-9]+)")
MEMORY = re.compile(r"\((\d+(?:\.\d+)?)\s*GB", re.I)  # "A100 (80 GB SXM4)": per GPU


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
            specs = itype.get("specs") or {}
            if specs.get("gpus") == 0 or (not name.startswith("gpu_") and not specs.get("gpus")):
                return NOT_A_GPU_OFFER  # cpu_4x_general and the like
            m = NAME.match(name)
            if not m:
                raise ParseError(self.name, "instance_type.name", f"{name!r} does not follow gpu_<n>x_<gpu>")
            count = specs.get("gpus") or int(m.group(1))
            mem = MEMORY.search(str(itype.get("gpu_description") or itype.get("description") or ""))
            cents = field(self.name, itype, "price_cents_per_hour")
            regions = [r.get("name") for r in entry.get("regions_with_capacity_available") or []] or [None]
            return [make_offer(self.name, self.provider, instance_type=name, gpu_name=m.group(2).upper(),
                               gpu_count=count, price=cents / 100, unit="instance-hour", unit_scale="cents",
                               currency="USD", allocation="on_demand", observed_at=raw.fetched_at, rates=rates,
                               resolve=resolve, region=region, memory_gb=float(mem.group(1)) if mem else None,
                               availability="capacity" if region else "no capacity",
                               availability_status="available" if region else "unavailable")
                    for region in regions]

        return collect(data.values(), build)
