"""Price sources: one module per source, all behind the same two halves (``fetch`` and ``parse``)."""

from __future__ import annotations

from .akash import Akash
from .aws import AWS
from .azure import Azure
from .base import Offer, ParseError, ParseResult, RawPayload, Source
from .digitalocean import DigitalOcean
from .ecb import ECB
from .gcp import GoogleCloud
from .hetzner import Hetzner
from .lambda_cloud import LambdaCloud
from .oci import Oracle
from .ovh import OVHcloud
from .runpod import RunPod
from .scaleway import Scaleway
from .skypilot import SOURCES as SKYPILOT_SOURCES
from .vastai import VastAI
from .verda import Verda
from .vultr import Vultr

PRICE_SOURCES: dict[str, Source] = {
    s.name: s for s in [Azure(), Oracle(), Scaleway(), Vultr(), Akash(), Verda(), OVHcloud(), AWS(), RunPod(),
                        VastAI(), LambdaCloud(), DigitalOcean(), GoogleCloud(), Hetzner(), *SKYPILOT_SOURCES]
}
CURRENCY_SOURCE = ECB()


def get_source(name: str) -> Source:
    if name == CURRENCY_SOURCE.name:
        return CURRENCY_SOURCE
    try:
        return PRICE_SOURCES[name]
    except KeyError:
        raise KeyError(f"unknown source {name!r} (known: {', '.join(sorted(PRICE_SOURCES))}, ecb)") from None


__all__ = ["CURRENCY_SOURCE", "PRICE_SOURCES", "Offer", "ParseError", "ParseResult", "RawPayload", "Source",
           "get_source"]
