"""The ECB's daily euro reference rates (no key): the currency source every non-USD price is converted with."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx

from pipeline.sources.base import ParseError, ParseResult, RawPayload, Source
from pipeline.sources.fx import FxError, FxRates, parse_ecb

URL = "https://www.ecb.europa.eu/stats/eurofxref/eurofxref-daily.xml"


class ECB(Source):
    name = "ecb"
    provider = "ecb"
    endpoint = URL
    unit = "units of currency per EUR"
    conditional = True
    yields_offers = False

    def fetch(self, client: httpx.Client) -> RawPayload:
        return RawPayload(source=self.name, fetched_at=datetime.now(UTC),
                          parts=(self.get(client, URL, conditional=True),))

    def rates(self, raw: RawPayload) -> FxRates:
        try:
            return parse_ecb(raw.parts[0].body)
        except FxError as exc:
            raise ParseError(self.name, "Cube", str(exc)) from exc

    def parse_payload(self, raw: RawPayload, rates: FxRates | None) -> ParseResult:
        self.rates(raw)  # validates; rates are not offers
        return ParseResult(offers=[])
