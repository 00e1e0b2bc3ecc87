"""Hetzner dedicated GPU servers (GEX line): scraped from the public GPU server matrix page (no API has them:
the Cloud API lists no GPU types). Dedicated servers are rented per month (plus a setup fee), not by the hour:
offers are ``monthly`` with their monthly EUR price (``price_per_month``); the hourly figures are monthly / 730,
for comparison only, and never an on-demand price.

The page is parsed with BeautifulSoup by column headers, not positions: when the table or a header moves, the
parser raises a ParseError naming what it looked for instead of reading the wrong cell.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import httpx
from bs4 import BeautifulSoup

from pipeline.sources.base import ParseError, ParseResult, RawPayload, Source, collect, make_offer, number
from pipeline.sources.fx import FxRates
from pipeline.sources.gpu_names import resolve

URL = "https://www.hetzner.com/dedicated-rootserver/matrix-gpu/"
HEADERS = ("model", "gpu", "price")


class Hetzner(Source):
    name = "hetzner"
    provider = "hetzner"
    endpoint = URL
    unit = "EUR per server-month"

    def fetch(self, client: httpx.Client) -> RawPayload:
        return RawPayload(source=self.name, fetched_at=datetime.now(UTC), parts=(self.get(client, URL),))

    def parse_payload(self, raw: RawPayload, rates: FxRates | None) -> ParseResult:
        soup = BeautifulSoup(raw.parts[0].body, "html.parser")
        table = soup.find("table", attrs={"data-matrix": "gpu"})
        if table is None:
            raise ParseError(self.name, "table[data-matrix=gpu]", "GPU server table not found: the page layout moved")
        head = [th.get_text(strip=True).lower() for th in table.find_all("th")]
        missing = [h for h in HEADERS if not any(x.startswith(h) for x in head)]
        if missing:
            raise ParseError(self.name, f"th:{missing[0]}", f"column not found among {head}")
        col = {h: next(i for i, x in enumerate(head) if x.startswith(h)) for h in HEADERS}
        rows = [[td.get_text(" ", strip=True) for td in tr.find_all("td")] for tr in table.find_all("tr")]
        rows = [r for r in rows if len(r) == len(head)]

        def build(cells):  # type: ignore[no-untyped-def]
            gpu_text = cells[col["gpu"]]
            m = re.match(r"(?:(\d+)\s*x\s*)?(?:NVIDIA\s+)?(.+?)(?:\s+(\d+)\s*GB)?$", gpu_text)
            if not m:
                raise ParseError(self.name, "gpu", f"cannot read {gpu_text!r}")
            price_text = re.sub(r"[^\d.,]", "", cells[col["price"]]).replace(",", ".")
            monthly = number(self.name, price_text, "price")
            return make_offer(self.name, self.provider, instance_type=cells[col["model"]], gpu_name=m.group(2),
                              gpu_count=int(m.group(1) or 1), price=monthly, unit="instance-month",
                              currency="EUR", allocation="monthly",
                              observed_at=raw.fetched_at, rates=rates, resolve=resolve,
                              memory_gb=float(m.group(3)) if m.group(3) else None)

        return collect(rows, build)
