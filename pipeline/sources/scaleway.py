"""Scaleway Instances: ``GET /instance/v1/zones/{zone}/products/servers`` per zone (no key needed to read).

EUR per instance-hour (``hourly_price``); ``gpu_info.gpu_memory`` in bytes per GPU. A zone that answers 404 does
not offer Instances and is skipped; any other error fails the fetch.

The list is paginated (``per_page`` at most 100; the catalog has ~136 types, total in ``X-Total-Count``): pages
are read until one comes back with fewer than ``per_page`` types. Types without a GPU are counted as ignored.
A type with a ``mig_profile`` ("1g.10gb") rents MIG slices: a share of the card (slice memory / card memory),
never whole GPUs (a fractional flag alone would still count it as whole GPUs).

Older answers have no ``gpu_info`` (fields added later are optional, so a re-parse of history keeps every offer):
the card is then read from the commercial type, ``<model>[-SXM]-<count>-<memory>G`` (``L40S-1-48G``,
``H100-SXM-8-80G``), or for the two types named otherwise from :data:`LEGACY_TYPES`; the GPU map's Scaleway rows
say which H100 a type is.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

import httpx

from pipeline.sources.base import (
    NOT_A_GPU_OFFER,
    ParseResult,
    RawPayload,
    RowRejected,
    Source,
    collect,
    field,
    json_body,
    make_offer,
    number,
)
from pipeline.sources.fx import FxRates
from pipeline.sources.gpu_names import MIG_PROFILE, resolve, slice_of

ZONES = ("fr-par-1", "fr-par-2", "nl-ams-1", "pl-waw-2")
PER_PAGE = 100
URL = "https://api.scaleway.com/instance/v1/zones/{zone}/products/servers?per_page=100"
MAX_PAGES = 20
#: the commercial types whose names do not follow <model>-<count>-<memory>G, with the card each rents (the names
#: SkyPilot's Scaleway catalog fetcher gave them when the API answered without gpu_info: Tesla P100-PCIE-16GB,
#: GeForce RTX 3070)
LEGACY_TYPES = {"RENDER-S": ("P100", 16.0), "GPU-3070-S": ("RTX 3070", 8.0)}
TYPE_NAME = re.compile(r"^(?P<model>[A-Z0-9]+(?:-SXM)?)-(?P<count>\d+)-(?P<gb>\d+)G$")


def card_of_type(commercial_type: str) -> tuple[str, float] | None:
    """(GPU name, memory per GPU in GB) a commercial type's name states, for answers without ``gpu_info``."""
    if commercial_type in LEGACY_TYPES:
        return LEGACY_TYPES[commercial_type]
    m = TYPE_NAME.match(commercial_type)
    return (m["model"], float(m["gb"])) if m else None


class Scaleway(Source):
    name = provider = "scaleway"
    endpoint = URL
    unit = "EUR per instance-hour"

    def fetch(self, client: httpx.Client) -> RawPayload:
        parts = []
        for zone in ZONES:
            for page in range(1, MAX_PAGES + 1):
                url = URL.format(zone=zone) + (f"&page={page}" if page > 1 else "")
                part = self.get(client, url, allow_statuses=(404,))
                parts.append(part)
                if part.status == 404 or len(json_body(self.name, part).get("servers") or {}) < PER_PAGE:
                    break
        return RawPayload(source=self.name, fetched_at=datetime.now(UTC), parts=tuple(parts))

    def parse_payload(self, raw: RawPayload, rates: FxRates | None) -> ParseResult:
        rows = []
        for part in raw.parts:
            if part.status == 404:
                continue
            zone = part.url.split("/zones/")[1].split("/")[0] if "/zones/" in part.url else None
            servers = field(self.name, json_body(self.name, part), "servers")
            rows += [(zone, name, spec) for name, spec in servers.items()]

        def build(row):  # type: ignore[no-untyped-def]
            zone, name, spec = row
            gpus = spec.get("gpu") or 0
            if not gpus:
                return NOT_A_GPU_OFFER
            info = spec.get("gpu_info")
            if info is None:  # an older answer: the commercial type names the card
                stated = card_of_type(name)
                if stated is None:
                    raise RowRejected(self.name, "gpu_info", f"{name}: no gpu_info and a type name that names no card")
                gpu_name, memory = stated
            else:
                gpu_name = field(self.name, info, "gpu_name")
                memory = info.get("gpu_memory", 0) / 2**30 or None
            share, card = 1.0, None
            if profile := spec.get("mig_profile"):  # a MIG slice ("1g.10gb"): a share of one card, never whole
                m = MIG_PROFILE.match(str(profile))
                sliced = slice_of(self.provider, gpu_name, float(m["gb"]), name) if m else None
                if sliced is None:
                    raise RowRejected(self.name, "mig_profile", f"{name}: MIG profile {profile!r} of {gpu_name!r} "
                                                                "cannot be sized (unknown profile or card)")
                _, share, card = sliced
                memory = float(m["gb"])
            return make_offer(self.name, self.provider, instance_type=name, gpu_name=gpu_name,
                              gpu_count=gpus * share, gpu_share=share, parent_memory_gb=card,
                              price=number(self.name, field(self.name, spec, "hourly_price"), "hourly_price"),
                              unit="instance-hour", currency="EUR", allocation="on_demand", observed_at=raw.fetched_at,
                              rates=rates, resolve=resolve, region=zone.rsplit("-", 1)[0] if zone else None, zone=zone,
                              memory_gb=memory, vcpus=spec.get("ncpus"), ram_gb=spec.get("ram", 0) / 2**30 or None)

        return collect(rows, build)
