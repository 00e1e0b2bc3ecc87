"""Price ingestion glue: fetch the currency source, then every price source, each isolated from the others.

``replay=True`` (the default on a machine without network; ``VRAMLAB_LIVE=1`` switches to live sources) serves
recorded payloads through :class:`ReplayTransport`; keyed sources then run without keys, since no request leaves
the machine. The same code path runs in both modes.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import httpx

from pipeline.sources import CURRENCY_SOURCE, PRICE_SOURCES
from pipeline.sources.base import ParseResult, Source
from pipeline.sources.fx import FxRates, parse_ecb
from pipeline.sources.http import SourceClient, make_client
from pipeline.sources.landing import FetchLogEntry, landed_payloads, load_landed, run_source
from pipeline.sources.replay import REPLAY_ROOT, ReplayTransport


def live_mode() -> bool:
    return os.environ.get("VRAMLAB_LIVE", "").lower() in ("1", "true", "yes")


def client_for(replay: bool, fail_sources: tuple[str, ...] | list[str] = (), step: str = "") -> SourceClient:
    """A client for live fetching, or one replaying the recordings (``fail_sources`` answer HTTP 500: a drill;
    ``step``: a replay series step, see ``pipeline/sources/replay.py``)."""
    if replay:
        transport = ReplayTransport(step=step or None)
        failing = {e["url"]: httpx.Response(500, text="replay failure drill") for e in transport.manifest
                   if e["source"] in set(fail_sources)}
        transport = ReplayTransport(overrides=failing, step=step or None) if failing else transport
        return make_client(transport, sleep=lambda _s: None, min_interval=0.0)
    return make_client()


def latest_rates(data_dir: Path) -> FxRates:
    """Rates from the newest landed ECB payload, else the bundled recording (its own date travels with it)."""
    for meta in reversed(landed_payloads(data_dir, CURRENCY_SOURCE.name)):
        payload = load_landed(meta)
        if payload.parts and payload.parts[0].status == 200:
            try:
                return CURRENCY_SOURCE.rates(payload)
            except Exception:  # noqa: BLE001 - a bad landed file falls back to an older one
                continue
    return parse_ecb((REPLAY_ROOT / "prices" / "ecb" / "eurofxref-daily.xml").read_bytes())


def fetch_sources(sources: list[Source], data_dir: Path, *, replay: bool, client: SourceClient | None = None,
                  now: datetime | None = None) -> tuple[FxRates, list[tuple[FetchLogEntry, ParseResult | None]]]:
    client = client or client_for(replay)
    run_source(CURRENCY_SOURCE, client, data_dir, replay=replay, now=now)
    rates = latest_rates(data_dir)
    results = [run_source(s, client, data_dir, rates, replay=replay, now=now) for s in sources]
    return rates, results


def all_price_sources() -> list[Source]:
    return list(PRICE_SOURCES.values())
