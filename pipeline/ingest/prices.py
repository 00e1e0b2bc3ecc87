"""Price ingestion glue: fetch the currency source, then every price source, each isolated from the others.

Price sources are fetched concurrently in a thread pool (``VRAMLAB_FETCH_WORKERS``, default 32: one thread per
source): the work is
waiting on the network, so threads in one process are enough and cost no start-up (a process per source under
Dagster's multiprocess executor costs seconds each on a small machine; see docs/decisions.md). Each source gets
its own client (its own retry waits, validators and received parts for the fetch log); all clients share one
:class:`HostGate`, so the per-host request spacing holds across sources that share a host. Fetching never opens
DuckDB, so concurrency here never meets the database's single-writer rule.

``replay=True`` (the default on a machine without network; ``VRAMLAB_LIVE=1`` switches to live sources) serves
recorded payloads through :class:`ReplayTransport`; keyed sources then run without keys, since no request leaves
the machine. The same code path runs in both modes.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit

import httpx

from pipeline.settings import variable
from pipeline.sources import CURRENCY_SOURCE, PRICE_SOURCES
from pipeline.sources.base import ParseResult, Source
from pipeline.sources.fx import FxRates, parse_ecb
from pipeline.sources.http import HostGate, SourceClient, make_client
from pipeline.sources.landing import FetchLogEntry, landed_payloads, load_landed, run_source
from pipeline.sources.replay import REPLAY_ROOT, ReplayTransport


def live_mode() -> bool:
    return variable("VRAMLAB_LIVE").on()


def client_for(replay: bool, fail_sources: tuple[str, ...] | list[str] = (), gate: HostGate | None = None,
               step: str = "") -> SourceClient:
    """A client for live fetching, or one replaying the recordings (``fail_sources`` answer HTTP 500: a drill).
    ``gate``: the per-host request spacing shared with other clients of the same run; ``step``: a replay series
    step (``pipeline/sources/replay.py``), "" for the current recordings."""
    if replay:
        transport = ReplayTransport(step=step or None)
        failing = {e["url"]: httpx.Response(500, text="replay failure drill") for e in transport.manifest
                   if e["source"] in set(fail_sources)}
        transport = ReplayTransport(overrides=failing, step=step or None) if failing else transport
        return make_client(transport, sleep=lambda _s: None, min_interval=0.0, gate=gate)
    return make_client(gate=gate)


def fetch_workers() -> int:
    return max(1, variable("VRAMLAB_FETCH_WORKERS").whole())


def fetch_concurrently(sources: list[Source], data_dir: Path, rates: FxRates | None, *, replay: bool,
                       client_factory: Callable[[HostGate], SourceClient] | None = None, workers: int | None = None,
                       now: datetime | None = None,
                       gate: HostGate | None = None) -> list[tuple[FetchLogEntry, ParseResult | None]]:
    """Run ``sources`` concurrently (each isolated: ``run_source`` records every outcome and never raises for a
    source's failure); results in the order of ``sources``. ``client_factory`` builds one client per source
    around the shared host gate (default: :func:`client_for`); ``gate``: that gate, when the caller wants to
    read it afterwards (the hosts it skipped), else a new one."""
    gate = gate or HostGate()
    factory = client_factory or (lambda g: client_for(replay, gate=g))
    if not sources:
        return []

    def one(source: Source) -> tuple[FetchLogEntry, ParseResult | None]:
        with factory(gate) as client:
            return run_source(source, client, data_dir, rates, replay=replay, now=now)

    # longest chains first: sources sharing a host wait on each other (per-host spacing), so with fewer workers
    # than sources those start first and the others fill in around them
    per_host: dict[str | None, int] = {}
    for source in sources:
        per_host[urlsplit(source.endpoint).hostname] = per_host.get(urlsplit(source.endpoint).hostname, 0) + 1
    order = sorted(range(len(sources)), key=lambda i: -per_host[urlsplit(sources[i].endpoint).hostname])
    with ThreadPoolExecutor(max_workers=min(workers or fetch_workers(), len(sources)),
                            thread_name_prefix="vramlab-fetch") as pool:
        futures = {i: pool.submit(one, sources[i]) for i in order}
        return [futures[i].result() for i in range(len(sources))]


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
    """The currency source first (prices in other currencies need its rates), then ``sources`` concurrently; with
    ``client`` given, everything runs one after another on it (tests that count requests on one transport)."""
    if client is not None:
        run_source(CURRENCY_SOURCE, client, data_dir, replay=replay, now=now)
        rates = latest_rates(data_dir)
        return rates, [run_source(s, client, data_dir, rates, replay=replay, now=now) for s in sources]
    with client_for(replay) as ecb_client:
        run_source(CURRENCY_SOURCE, ecb_client, data_dir, replay=replay, now=now)
    rates = latest_rates(data_dir)
    return rates, fetch_concurrently(sources, data_dir, rates, replay=replay, now=now)


def all_price_sources() -> list[Source]:
    return list(PRICE_SOURCES.values())
