"""Price sources: one module per source, all behind the same two halves (``fetch`` and ``parse``)."""

from __future__ import annotations

from pipeline.sources.akash import Akash
from pipeline.sources.aws import AWS
from pipeline.sources.azure import Azure
from pipeline.sources.base import Offer, ParseError, ParseResult, RawPayload, Source
from pipeline.sources.digitalocean import DigitalOcean
from pipeline.sources.ecb import ECB
from pipeline.sources.gcp import GoogleCloud
from pipeline.sources.gpu_price_feed import GpuPriceFeed
from pipeline.sources.hetzner import Hetzner
from pipeline.sources.lambda_cloud import LambdaCloud
from pipeline.sources.oci import Oracle
from pipeline.sources.ovh import OVHcloud
from pipeline.sources.runpod import RunPod
from pipeline.sources.scaleway import Scaleway
from pipeline.sources.skypilot import SOURCES as SKYPILOT_SOURCES
from pipeline.sources.vastai import VastAI
from pipeline.sources.verda import Verda
from pipeline.sources.vultr import Vultr

PRICE_SOURCES: dict[str, Source] = {
    s.name: s for s in [Azure(), Oracle(), Scaleway(), Vultr(), Akash(), Verda(), OVHcloud(), AWS(), RunPod(),
                        VastAI(), LambdaCloud(), DigitalOcean(), GoogleCloud(), Hetzner(), *SKYPILOT_SOURCES,
                        GpuPriceFeed()]
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
