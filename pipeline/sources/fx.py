"""Exchange rates: the ECB's daily euro reference rates, with the date they are for.

The ECB quotes units of each currency per euro. We convert a price in currency C to USD as
``price / per_usd(C)`` with ``per_usd(C) = rate(C) / rate(USD)`` (``per_usd(EUR) = 1 / rate(USD)``).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from pydantic import BaseModel, ConfigDict


class FxError(ValueError):
    pass


class FxRates(BaseModel):
    model_config = ConfigDict(frozen=True)

    date: str  # the ECB reference date, YYYY-MM-DD
    per_eur: dict[str, float]  # units of currency per euro; EUR itself is 1

    def per_usd(self, currency: str, source: str = "") -> tuple[float, str]:
        """(units of ``currency`` per USD, rate date); FxError naming the currency when it has no rate."""
        cur = currency.upper()
        if "USD" not in self.per_eur:
            raise FxError(f"ECB rates of {self.date} have no USD rate")
        if cur not in self.per_eur:
            who = f"{source}: " if source else ""
            raise FxError(f"{who}currency {currency!r} has no ECB reference rate (rates of {self.date})")
        return self.per_eur[cur] / self.per_eur["USD"], self.date


def parse_ecb(xml: bytes | str) -> FxRates:
    """Parse ``eurofxref-daily.xml`` (namespaced, single-quoted attributes). FxError when the shape moved."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        raise FxError(f"ECB rates: not XML ({exc})") from exc
    dated = [c for c in root.iter() if c.tag.endswith("Cube") and "time" in c.attrib]
    if not dated:
        raise FxError("ECB rates: no <Cube time=...> element")
    day = dated[0]
    rates = {"EUR": 1.0}
    for cube in day:
        try:
            rates[cube.attrib["currency"].upper()] = float(cube.attrib["rate"])
        except (KeyError, ValueError) as exc:
            raise FxError(f"ECB rates: bad currency entry {cube.attrib!r}") from exc
    if len(rates) < 2:
        raise FxError(f"ECB rates of {day.attrib['time']}: no currencies")
    return FxRates(date=day.attrib["time"], per_eur=rates)
