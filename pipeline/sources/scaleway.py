"""Scaleway Instances: ``GET /instance/v1/zones/{zone}/products/servers`` per zone (no key needed to read).

EUR per instance-hour (``hourly_price``); ``gpu_info.gpu_memory`` in bytes per GPU. A zone that answers 404 does
not offer Instances and is skipped; any other error fails the fetch.

The list is paginated (``per_page`` at most 100; the catalog has ~136 types, total in ``X-Total-Count``): pages
are read until one comes back with fewer than ``per_page`` types. Types without a GPU are counted as ignored.
A type with a ``mig_profile`` ("1g.10gb") rents MIG slices: a share of the card (slice memory / card memory),
never whole GPUs (a fractional flag alone would still count it as whole GPUs).
"""

from __future__ import annotations

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
            info = field(self.name, spec, "gpu_info")
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
