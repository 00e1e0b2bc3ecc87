"""Old payload formats stay readable: a parser accepts the shapes its source has served over the years (fields added
later are optional), so a re-parse of history keeps every offer.

Scaleway: the genuine 2026 capture (tests/fixtures/prices/scaleway.servers.json, cited in the fixtures README) as
older answers wrote it, without ``gpu_info`` (constructed: the key removed; SkyPilot's Scaleway catalog fetcher
named RENDER-S and GPU-3070-S's cards itself because the answers it read had no GPU details). Before, the first GPU
type without ``gpu_info`` stopped the parse: every offer of the answer was lost."""

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


def test_commercial_type_names_state_the_card() -> None:
    assert card_of_type("L40S-1-48G") == ("L40S", 48.0)
    assert card_of_type("H100-SXM-8-80G") == ("H100-SXM", 80.0)
    assert card_of_type("B300-SXM-8-288G") == ("B300-SXM", 288.0)
    assert card_of_type("GPU-3070-S") == ("RTX 3070", 8.0)
    assert card_of_type("RENDER-S") == ("P100", 16.0)
    assert card_of_type("DEV1-S") is None
