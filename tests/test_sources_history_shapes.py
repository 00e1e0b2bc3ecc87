"""Old payload formats stay readable: a parser accepts the shapes its source has served over the years (fields added
later are optional), so a re-parse of history keeps every offer.

Scaleway: a genuine 2023 answer without ``gpu_info`` (scaleway-cli's recording of fr-par-2's products/servers,
tests/fixtures/prices/scaleway.servers.2023-12-06.json, cited in the fixtures README), and the genuine 2026 capture
(tests/fixtures/prices/scaleway.servers.json) with the key taken out, which must read as it does with it. Before,
the first GPU type without ``gpu_info`` stopped the parse: every offer of the answer was lost."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path

from pipeline.sources import PRICE_SOURCES
from pipeline.sources.base import RawPart, RawPayload
from pipeline.sources.fx import FxRates
from pipeline.sources.scaleway import card_of_type

CAPTURE = Path(__file__).resolve().parent / "fixtures" / "prices" / "scaleway.servers.json"
CAPTURE_2023 = CAPTURE.with_name("scaleway.servers.2023-12-06.json")
RATES = FxRates(date="2024-02-27", per_eur={"EUR": 1, "USD": 1.0856})
URL = "https://api.scaleway.com/instance/v1/zones/fr-par-2/products/servers?per_page=100"


def _offers(payload: dict) -> dict[str, tuple]:
    raw = RawPayload(source="scaleway", fetched_at=datetime(2026, 12, 4, tzinfo=UTC),
                     parts=(RawPart(url=URL, status=200, body=json.dumps(payload).encode()),))
    result = PRICE_SOURCES["scaleway"].parse(raw, RATES)
    assert not result.rejected
    return {o.instance_type: (o.gpu_id, o.gpu_count, o.price_per_hour) for o in result.offers}


def test_scaleway_answers_without_gpu_info_keep_every_offer() -> None:
    now = json.loads(CAPTURE.read_text())
    older = copy.deepcopy(now)
    for spec in older["servers"].values():
        spec.pop("gpu_info", None)
    current, historic = _offers(now), _offers(older)
    assert len(current) == 7
    assert historic == current  # the same cards, counts and prices from the type names alone


def test_a_genuine_2023_answer_without_gpu_info_keeps_every_gpu_offer() -> None:
    """The 2023 answer (59 server types over two pages, merged) states each GPU type's card count in a plain
    ``gpu`` field and no ``gpu_info``: every one of its 4 GPU types is an offer with the count and hourly price the
    answer states, the H100 types on the PCIe card Scaleway rents."""
    payload = json.loads(CAPTURE_2023.read_text())
    assert len(payload["servers"]) == 59 and not any("gpu_info" in s for s in payload["servers"].values())
    stated = {name: (float(s["gpu"]), s["hourly_price"]) for name, s in payload["servers"].items() if s.get("gpu")}
    assert sorted(stated) == ["GPU-3070-S", "H100-1-80G", "H100-2-80G", "RENDER-S"]
    offers = _offers(payload)
    assert {name: (count, price) for name, (_, count, price) in offers.items()} == stated
    assert offers["H100-1-80G"][0] == offers["H100-2-80G"][0] == "h100-pcie"


def test_commercial_type_names_state_the_card() -> None:
    assert card_of_type("L40S-1-48G") == ("L40S", 48.0)
    assert card_of_type("H100-SXM-8-80G") == ("H100-SXM", 80.0)
    assert card_of_type("B300-SXM-8-288G") == ("B300-SXM", 288.0)
    assert card_of_type("GPU-3070-S") == ("RTX 3070", 8.0)
    assert card_of_type("RENDER-S") == ("P100", 16.0)
    assert card_of_type("DEV1-S") is None
