"""gpu-price-feed: the dated price history of the public repository ``toolshedlabs-hash/gpu-price-feed``
(``data/history/v2/YYYY-MM.jsonl`` on raw.githubusercontent.com, no key). Its collector reads eight providers' own
APIs or pricing pages once a day and appends one JSON line per run: ``collected_at`` and, per provider, the cheapest
on-demand price per GPU per hour in USD for each of its GPU keys (spot, reserved and fractional plans are left out;
its METHODOLOGY.md says what each provider's number is). Schema 2 keys carry the form factor (``H100 80GB SXM``,
``H100 80GB PCIe``, ``H100 94GB NVL``, ``B200 180GB (form unstated)``); the frozen schema 1 files name ``H100 80GB``
for SXM and PCIe alike and are never read (a line without ``schema_version`` 2 is a ParseError).

A line is a record of past prices, not an offer: each price becomes a **reference** observation
(:data:`pipeline.sources.base.REFERENCE`) stamped with its own line's ``collected_at``, for the provider it names
(under vramlab's provider id), one GPU at the per-GPU price, its instance type ``record: <key> at <feed provider>``
(what a history table shows in place of an instance). Reference observations extend the price history only;
they are never current offers and never price a setup. A marketplace's record (Vast.ai: one host's asking price) is
a marketplace reference, as vramlab classes Vast's own listings.

GPU keys are read as the GPU map reads any listing: the family before the memory figure is the name, the memory
figure the per-GPU memory, and the whole key the instance type, whose words state the form factor (``SXM``,
``PCIe``, ``NVL``). ``(form unstated)`` states none, so such a card keeps an unknown form factor, never SXM; a key
the map does not know stays unmapped and reported.

The feed publishes one file per month: a fetch reads every month from the first schema 2 month to the current
one; a month not published yet answers 404 and holds no lines.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import httpx

from pipeline.sources.base import (
    Allocation,
    ParseError,
    ParseResult,
    RawPayload,
    Source,
    collect,
    make_offer,
    number,
)
from pipeline.sources.fx import FxRates
from pipeline.sources.gpu_names import resolve

REPO = "toolshedlabs-hash/gpu-price-feed"
URL = f"https://raw.githubusercontent.com/{REPO}/main/data/history/v2/{{month}}.jsonl"
FIRST_MONTH = (2026, 7)  # the first month of schema 2 lines
SCHEMA = 2
#: the feed's provider names -> vramlab's provider ids (the feed still says DataCrunch for Verda)
PROVIDERS = {"lambdalabs": "lambda", "datacrunch": "verda", "vastai": "vast"}
#: providers whose prices are set per machine by hosts (METHODOLOGY.md: "Vast is a marketplace")
MARKETPLACES = ("vastai",)
KEY = re.compile(r"^(?P<family>.+?)\s+(?P<gb>\d+(?:\.\d+)?)GB(?:\s|$)")


def months(until: datetime) -> list[str]:
    """``YYYY-MM`` from :data:`FIRST_MONTH` to ``until``'s month."""
    year, month = FIRST_MONTH
    out = []
    while (year, month) <= (until.year, until.month):
        out.append(f"{year:04d}-{month:02d}")
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return out


def read_key(key: str) -> tuple[str, float | None]:
    """The name the GPU map reads and the per-GPU memory of a feed key: ``H100 80GB SXM`` -> (``H100``, 80.0),
    ``RTX 4090 24GB`` -> (``RTX 4090``, 24.0); a key without a memory figure is its own name."""
    m = KEY.match(key)
    return (m["family"], float(m["gb"])) if m else (key, None)


class GpuPriceFeed(Source):
    name = provider = "gpu-price-feed"
    endpoint = URL.format(month="YYYY-MM")
    unit = "USD per GPU-hour: the cheapest on-demand price per provider and GPU, one line per daily collector run"

    def fetch(self, client: httpx.Client) -> RawPayload:
        now = datetime.now(UTC)
        parts = tuple(self.get(client, URL.format(month=m), allow_statuses=(404,)) for m in months(now))
        return RawPayload(source=self.name, fetched_at=now, parts=parts)

    def parse_payload(self, raw: RawPayload, rates: FxRates | None) -> ParseResult:
        rows = [row for part in raw.parts if part.status == 200 for row in self._rows(part.url, part.body)]
        return collect(rows, self._offer)

    def _rows(self, url: str, body: bytes) -> list[tuple[datetime, str, str, object]]:
        """(collected_at, feed provider, GPU key, price) of every price of every line."""
        out = []
        for n, text in enumerate(body.decode("utf-8").splitlines(), start=1):
            if not text.strip():
                continue
            try:
                line = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ParseError(self.name, f"line {n}", f"{url}: not JSON ({exc})") from exc
            if not isinstance(line, dict) or line.get("schema_version") != SCHEMA:
                raise ParseError(self.name, f"line {n}.schema_version", f"{url}: expected {SCHEMA} (schema 1 keys "
                                 "do not say the form factor and are never mixed in)")
            try:
                at = datetime.fromisoformat(str(line["collected_at"]))
                cheapest = line["cheapest"]
            except (KeyError, ValueError) as exc:
                raise ParseError(self.name, f"line {n}.collected_at", f"{url}: {exc}") from exc
            if at.tzinfo is None or not isinstance(cheapest, dict):
                raise ParseError(self.name, f"line {n}", f"{url}: collected_at without a zone or no cheapest map")
            for provider, prices in cheapest.items():
                if not isinstance(prices, dict):
                    raise ParseError(self.name, f"line {n}.cheapest.{provider}", "expected a map of GPU key -> price")
                out += [(at, provider, key, price) for key, price in prices.items()]
        return out

    def _offer(self, row: tuple[datetime, str, str, object]):  # type: ignore[no-untyped-def]
        at, feed_provider, key, price = row
        name, memory = read_key(key)
        allocation: Allocation = "reference_marketplace" if feed_provider in MARKETPLACES else "reference_on_demand"
        return make_offer(self.name, PROVIDERS.get(feed_provider, feed_provider),
                          instance_type=f"record: {key} at {feed_provider}", gpu_name=key, map_name=name, gpu_count=1,
                          price=number(self.name, price, key), unit="gpu-hour", currency="USD",
                          allocation=allocation, observed_at=at, rates=None, resolve=resolve, memory_gb=memory)
