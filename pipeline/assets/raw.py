"""Raw layer: one asset per source. Each fetches and lands its payload and records the attempt; a failing source
is reported in its own metadata and never fails the others. Scraping never opens DuckDB.

The price sources are one multi-asset (``raw_prices``, one asset key per source, subsettable): a single step
that fetches the selected sources concurrently in threads (``pipeline.ingest.prices.fetch_concurrently``), so a
run costs about the slowest source instead of the sum, without a process per source (docs/decisions.md).
"""

import time

import dagster as dg

from pipeline.assets.metadata import table
from pipeline.compute.gc_passes import fewer_gc_passes
from pipeline.ingest.models import discovery_enabled, discovery_summary, hub_client, ingest_hub
from pipeline.ingest.prices import client_for, fetch_concurrently, latest_rates
from pipeline.resources import VramlabSettings
from pipeline.settings import ForeignLink, check_data_dir
from pipeline.sources import CURRENCY_SOURCE, PRICE_SOURCES
from pipeline.sources.base import Source
from pipeline.sources.http import HostGate, skipped_hosts
from pipeline.sources.landing import HEALTHY, ClockBehind, FetchLogEntry, check_clock, run_source

RAW_GROUP = "raw"


def asset_name(source_name: str) -> str:
    return "raw_prices__" + source_name.replace("-", "_").replace(".", "_")


def _description(source: Source) -> str:
    return (f"{source.provider}: {source.endpoint} ({source.unit}; auth: {source.auth}). "
            "Fetched, landed under data/raw, recorded in the fetch log.")


def _metadata(entry: FetchLogEntry, replay: bool) -> dict:
    return {"outcome": entry.outcome, "offers": entry.offers, "rejected": entry.rejected,
            "unmapped": dg.MetadataValue.json(entry.unmapped), "bytes": entry.bytes,
            "message": entry.message or "", "raw_path": dg.MetadataValue.path(entry.raw_path or ""),
            "fetched_at": dg.MetadataValue.timestamp(entry.started_at), "mode": "replay" if replay else "live",
            # drift canaries (live): the source is degraded, its last good offers stay published
            "degraded": entry.outcome == "degraded", "drift": dg.MetadataValue.json(entry.drift)}


def _clock_not_ahead(entries: list[FetchLogEntry]) -> None:
    """A live fetch whose answer's ``Date`` says this machine's clock is ahead ends the run before anything is
    loaded or published: a snapshot would be dated in the future and lock later runs out."""
    ahead = [e for e in entries if e.outcome == "clock_ahead"]
    if ahead:
        raise dg.Failure(description=ahead[0].message or "clock ahead", allow_retries=False)


def _clock_sane(s) -> None:  # type: ignore[no-untyped-def] - pipeline.settings.Settings
    """A fetch never writes through a symlink out of the data directory, and a live fetch never starts on a clock
    behind what is already recorded (replay times are recordings')."""
    try:
        check_data_dir(s.data_dir)
    except ForeignLink as exc:
        raise dg.Failure(description=str(exc), allow_retries=False) from None
    if not s.replay:
        try:
            check_clock(s.data_dir)
        except ClockBehind as exc:
            raise dg.Failure(description=str(exc), allow_retries=False) from None


#: the price steps start before the Hub step whenever both are ready (Dagster starts ready steps by this tag, in
#: every executor): a slow Hub never holds the prices back, and neither depends on the other in the graph
PRICES_FIRST = {"dagster/priority": "1"}


@dg.asset(name=asset_name(CURRENCY_SOURCE.name), group_name=RAW_GROUP, kinds={"python", "httpx"},
          description=_description(CURRENCY_SOURCE), tags={"vramlab/layer": "raw"}, op_tags=PRICES_FIRST)
def raw_prices__ecb(context: dg.AssetExecutionContext, vramlab: VramlabSettings) -> dg.MaterializeResult:
    s = vramlab.settings
    _clock_sane(s)
    with client_for(s.replay, vramlab.fail_sources, step=s.replay_step) as client:
        entry, _ = run_source(CURRENCY_SOURCE, client, s.data_dir, None, replay=s.replay)
    if entry.outcome not in HEALTHY:
        context.log.warning(f"{CURRENCY_SOURCE.name}: {entry.outcome}: {entry.message}")
    _clock_not_ahead([entry])
    return dg.MaterializeResult(metadata=_metadata(entry, s.replay))


ECB_ASSET = raw_prices__ecb
PRICE_SPECS = {dg.AssetKey(asset_name(source.name)): source for source in PRICE_SOURCES.values()}


@dg.multi_asset(name="raw_prices", can_subset=True, specs=[
    dg.AssetSpec(key, group_name=RAW_GROUP, deps=[ECB_ASSET.key], kinds={"python", "httpx"},
                 description=_description(source), tags={"vramlab/layer": "raw"}, skippable=True)
    for key, source in PRICE_SPECS.items()], op_tags=PRICES_FIRST)
def raw_prices(context: dg.AssetExecutionContext, vramlab: VramlabSettings):  # type: ignore[no-untyped-def]
    """Every selected price source, fetched concurrently; one materialization per source."""
    s = vramlab.settings
    _clock_sane(s)
    selected = [(key, source) for key, source in PRICE_SPECS.items() if key in context.selected_asset_keys]
    rates = latest_rates(s.data_dir)
    started = time.perf_counter()
    gate = HostGate()  # shared by every source's client: request spacing and the skipped-host breaker
    results = fetch_concurrently([source for _, source in selected], s.data_dir, rates, replay=s.replay, gate=gate,
                                 client_factory=lambda g: client_for(s.replay, vramlab.fail_sources, gate=g,
                                                                      step=s.replay_step))
    context.log.info(f"fetched {len(selected)} price sources concurrently in {time.perf_counter() - started:.1f} s")
    _warn_skipped(context, gate.skipped)
    for (key, source), (entry, _) in zip(selected, results, strict=True):
        if entry.outcome not in HEALTHY:
            context.log.warning(f"{source.name}: {entry.outcome}: {entry.message}")
        extra = {"hosts_skipped": dg.MetadataValue.json(dict(gate.skipped))} if gate.skipped else {}
        yield dg.MaterializeResult(asset_key=key, metadata={**_metadata(entry, s.replay), **extra})
    _clock_not_ahead([entry for entry, _ in results])


def _warn_skipped(context: dg.AssetExecutionContext, skipped: dict[str, float]) -> None:
    for host, seconds in sorted(skipped.items()):
        context.log.warning(f"host {host} asked to retry after {seconds:.0f} s: skipped for this run")


PRICE_ASSETS = [raw_prices]


@dg.asset(name="raw_hub__models", group_name=RAW_GROUP, kinds={"python", "httpx"}, tags={"vramlab/layer": "raw"},
          description="Hugging Face Hub: model info, config.json and sidecars of every watchlist model (and "
                      "discovered ones when VRAMLAB_DISCOVERY=1); unchanged shas are not re-fetched.")
def raw_hub__models(context: dg.AssetExecutionContext, vramlab: VramlabSettings) -> dg.MaterializeResult:
    s = vramlab.settings
    _clock_sane(s)
    discovery = discovery_enabled()
    client = hub_client(s.replay)
    with fewer_gc_passes(), client:
        results = ingest_hub(s.data_dir, replay=s.replay, discovery=discovery, client=client)
    skipped = skipped_hosts(client)  # a Hub that said "later" for longer than a request waits: skipped
    _warn_skipped(context, skipped)
    extra_skipped = {"hosts_skipped": dg.MetadataValue.json(skipped)} if skipped else {}
    rows = [(e.repo, log.outcome if log else "spec", model.sha[:12] if model else "") for e, log, model in results]
    outcomes = {}
    for _, log, _ in results:
        key = log.outcome if log else "spec"
        outcomes[key] = outcomes.get(key, 0) + 1
    extra = {}
    if discovery:  # how the discovered models sized: exactly from headers, by family/generic rule, or why not
        found = discovery_summary(results, s.data_dir)
        extra = {"discovery": dg.MetadataValue.json({k: v for k, v in found.items() if k != "models"}),
                 "discovered_models": dg.MetadataValue.md(
                     "| repo | sized | exact (headers) | note / reason |\n|---|---|---|---|\n" + "\n".join(
                         f"| {m['repo']} | {m['sized']} | {m['exact']} | {(m['why'] or '')[:160]} |"
                         for m in found["models"]))}
    return dg.MaterializeResult(metadata={
        **extra, **extra_skipped, "models": len(results), "outcomes": dg.MetadataValue.json(outcomes),
        "table": table([("repo", "string"), ("outcome", "string"), ("sha", "string")], rows)})


RAW_ASSETS = [ECB_ASSET, raw_prices, raw_hub__models]
