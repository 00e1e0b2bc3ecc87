"""Oracle Cloud: the cetools price list (``/products/``) joined with the estimator's ``shapes.json`` (no key).

GPU parts are priced per GPU-hour ("GPU Per Hour"), the same in every commercial region (no region in the offer).
Preemptible capacity costs 50% of on-demand where the shape allows it (reported as spot).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import httpx

from pipeline.sources.base import (
    NOT_A_GPU_OFFER,
    Ignored,
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

PRODUCTS = "https://apexapps.oracle.com/pls/apex/cetools/api/v1/products/?currencyCode=USD"
SHAPES = "https://www.oracle.com/a/ocom/docs/cloudestimator2/data/shapes.json"
INACTIVE = Ignored("shape not active")
NO_PRICE = Ignored("no published price for the shape's part")
#: shape name fragments whose GPU the name does not say plainly (fetch_oci.py overrides)
NAME_OVERRIDES = {"GPU4": "A100", "A100-v2": "A100-80GB", "GPU3": "V100", "GPU2": "P100", "RTXPRO": "RTX PRO 6000"}


def shape_gpu(shape: str) -> str:
    """GPU name from an OCI shape: BM.GPU.H100.8 -> H100, BM.GPU4.8 -> A100, 'BM.GPU.GB200.4 (NVL72)' -> GB200."""
    core = shape.split(" ")[0]
    parts = core.split(".")
    token = parts[2] if parts[1] == "GPU" and len(parts) > 3 else parts[1]
    return NAME_OVERRIDES.get(token, token)


class Oracle(Source):
    name = "oci"
    provider = "oci"  # one canonical id for Oracle (SkyPilot's catalog calls it oci too)
    endpoint = PRODUCTS
    unit = "USD per GPU-hour"

    def fetch(self, client: httpx.Client) -> RawPayload:
        parts = (self.get(client, PRODUCTS), self.get(client, SHAPES))
        return RawPayload(source=self.name, fetched_at=datetime.now(UTC), parts=parts)

    def parse_payload(self, raw: RawPayload, rates: FxRates | None) -> ParseResult:
        if len(raw.parts) != 2:
            raise ParseError(self.name, "parts", "expected the price list and the shapes file")
        products = field(self.name, json_body(self.name, raw.parts[0]), "items")
        shapes = field(self.name, json_body(self.name, raw.parts[1]), "items")
        prices: dict[str, tuple[float, str]] = {}
        for item in products:
            for loc in item.get("currencyCodeLocalizations", []):
                for p in loc.get("prices", []):
                    if p.get("model") == "PAY_AS_YOU_GO" and p.get("value"):
                        prices[item["partNumber"]] = (float(p["value"]), loc["currencyCode"])
        def build(shape):  # type: ignore[no-untyped-def]
            if (shape.get("subType") or {}).get("value") != "gpu":
                return NOT_A_GPU_OFFER
            if shape.get("status") != "ACTIVE":
                return INACTIVE
            name = field(self.name, shape, "name")
            qty = number(self.name, field(self.name, shape, "gpuQty"), "gpuQty")
            part = next((p["partNumber"] for p in shape.get("products", []) if (p.get("type") or {}).get("value") in
                         ("ocpu", "gpu")), None)
            if part is None or part not in prices:
                return NO_PRICE
            value, currency = prices[part]
            clean = re.sub(r"\s*\(.*\)$", "", name)
            common = dict(instance_type=clean, gpu_name=shape_gpu(clean), gpu_count=qty, unit="gpu-hour",
                          currency=currency, observed_at=raw.fetched_at, rates=rates, resolve=resolve)
            offers = [make_offer(self.name, self.provider, price=value, allocation="on_demand", **common)]
            if shape.get("allowPreemptible"):
                offers.append(make_offer(self.name, self.provider, price=value * 0.5, allocation="spot", **common))
            return offers

        return collect(shapes, build)
