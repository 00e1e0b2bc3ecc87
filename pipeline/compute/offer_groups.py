"""The offers a cheapest-setups search may rent, and their grouping: eligible current offers (the ``offers_judged``
view, sql/020), split by allocation class and grouped by (GPU, GPUs per instance), cheapest first, once per run
for every model (``pipeline/compute/setups.py``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pipeline.storage import offers_judged
from sizing_core.gpus import catalog

ON_DEMAND = ("on_demand",)
SPOT_LIKE = ("spot", "marketplace", "marketplace_median", "bid_statistics")


def eligible_offers(con: Any) -> list[dict[str, Any]]:
    """Current offers a setup may use: the ``offers_judged`` view's ``eligible`` (sql/020, the one definition),
    with the canonical provider and the allocation class in place of the source's own labels."""
    return offers_judged.eligible_rows(con)


def lead_key(offer: dict[str, Any]) -> tuple:
    """What decides, among offers of one provider, instance type and price, which one a setup shows: the order of
    ``Setup.rank_key`` on the fields such offers can differ in (source, region, allocation, currency, FX date,
    verified time; ``pipeline/compute/setups.py::rank_key_of``)."""
    region = offer.get("region")
    return (offer["source"], region is not None, region or "", offer.get("allocation_class") or offer["allocation"],
            offer["currency"], offer.get("fx_date") or "", offer["verified_at"].isoformat())


def distinct_offers(group: list[dict[str, Any]]) -> list[tuple[dict[str, Any], frozenset[str]]]:
    """``group`` (cheapest first) as one entry per provider x instance type x price, in the order of each entry's
    first offer: the offer a setup of it shows (the least :func:`lead_key`) and every region offering it."""
    entries: dict[tuple, tuple[dict[str, Any], set[str]]] = {}
    for offer in group:
        key = (offer["provider"], offer["instance_type"], offer["price_per_hour_usd"])
        if key not in entries:
            entries[key] = (offer, set())
        elif lead_key(offer) < lead_key(entries[key][0]):
            entries[key] = (offer, entries[key][1])
        entries[key][1].add(offer.get("region") or "")
    return [(lead, frozenset(regions)) for lead, regions in entries.values()]


def usable_offer(offer: dict[str, Any], allocations: tuple[str, ...]) -> bool:
    """Eligible (the ``offers_judged`` view's verdict, which offers from DuckDB and the published table carry;
    never re-derived here) and of one of ``allocations``."""
    return (offer.get("allocation_class") or offer["allocation"]) in allocations and offer.get("eligible") is True


class OfferGroups:
    """Usable offers of some allocations grouped by (GPU, GPUs per instance), each group cheapest first (a stable
    sort: equal prices keep their input order), with each group's cheapest price: built once per run and shared by
    every model and format. Cheapest first lets :func:`cheapest_setups` stop in a group at the first
    offer priced out of the top, instead of building a Setup for every offer cheaper than the top so far."""

    def __init__(self, offers: Iterable[dict[str, Any]], allocations: tuple[str, ...] = ON_DEMAND):
        gpus = catalog()
        self.allocations = allocations
        self.groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for offer in offers:
            if usable_offer(offer, allocations) and offer["gpu_id"] in gpus:
                self.groups.setdefault((offer["gpu_id"], int(offer["gpu_count"])), []).append(offer)
        for group in self.groups.values():
            group.sort(key=lambda o: o["price_per_hour_usd"])
        self.cheapest = {k: g[0]["price_per_hour_usd"] for k, g in self.groups.items()}
        #: per group, its distinct offers cheapest first: one entry per provider x instance type x price with the
        #: regions offering it, what the search ranks (a provider lists one price in many regions: ~7 offers each)
        self.distinct = {k: distinct_offers(g) for k, g in self.groups.items()}
        #: per group, every offer as an entry of its own region (the search by region)
        self.by_region = {k: [(o, (o.get("region") or "",)) for o in g] for k, g in self.groups.items()}
        #: every group at its cheapest offer's price, sorted (a heap): where a search by price starts
        self.queue = sorted((price, False, key) for key, price in self.cheapest.items())
