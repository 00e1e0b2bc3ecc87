"""Raw layer: one asset per source. Each fetches and lands its payload and records the attempt; a failing source
is reported in its own metadata and never fails the others. Scraping never opens DuckDB."""


import dagster as dg

from pipeline.ingest.models import discovery_enabled, discovery_summary, hub_client, ingest_hub
from pipeline.ingest.prices import client_for, latest_rates
from pipeline.resources import VramlabSettings
from pipeline.sources import CURRENCY_SOURCE, PRICE_SOURCES
from pipeline.sources.base import Source
from pipeline.sources.landing import run_source

RAW_GROUP = "raw"


def asset_name(source_name: str) -> str:
    return "raw_prices__" + source_name.replace("-", "_").replace(".", "_")


def _raw_price_asset(source: Source, deps: list[str]) -> dg.AssetsDefinition:
    @dg.asset(name=asset_name(source.name), group_name=RAW_GROUP, deps=deps, kinds={"python", "httpx"},
              description=f"{source.provider}: {source.endpoint} ({source.unit}; auth: {source.auth}). "
                          "Fetched, landed under data/raw, recorded in the fetch log.",
              tags={"vramlab/layer": "raw"})
    def _fetch(context: dg.AssetExecutionContext, vramlab: VramlabSettings) -> dg.MaterializeResult:
        s = vramlab.settings
        rates = latest_rates(s.data_dir) if source.yields_offers else None
        entry, _ = run_source(source, client_for(s.replay, vramlab.fail_sources), s.data_dir, rates, replay=s.replay)
        if entry.outcome not in ("ok", "partial", "unchanged"):
            context.log.warning(f"{source.name}: {entry.outcome}: {entry.message}")
        return dg.MaterializeResult(metadata={
            "outcome": entry.outcome, "offers": entry.offers, "rejected": entry.rejected,
            "unmapped": dg.MetadataValue.json(entry.unmapped), "bytes": entry.bytes,
            "message": entry.message or "", "raw_path": dg.MetadataValue.path(entry.raw_path or ""),
            "fetched_at": dg.MetadataValue.timestamp(entry.started_at), "mode": "replay" if s.replay else "live"})

    return _fetch


ECB_ASSET = _raw_price_asset(CURRENCY_SOURCE, [])
PRICE_ASSETS = [_raw_price_asset(s, [asset_name(CURRENCY_SOURCE.name)]) for s in PRICE_SOURCES.values()]


@dg.asset(name="raw_hub__models", group_name=RAW_GROUP, kinds={"python", "httpx"}, tags={"vramlab/layer": "raw"},
          description="Hugging Face Hub: model info, config.json and sidecars of every watchlist model (and "
                      "discovered ones when VRAMLAB_DISCOVERY=1); unchanged shas are not re-fetched.")
def raw_hub__models(context: dg.AssetExecutionContext, vramlab: VramlabSettings) -> dg.MaterializeResult:
    s = vramlab.settings
    discovery = discovery_enabled()
    results = ingest_hub(s.data_dir, replay=s.replay, discovery=discovery, client=hub_client(s.replay))
    rows = [f"| {e.repo} | {log.outcome if log else 'spec'} | {(model.sha[:12] if model else '')} |"
            for e, log, model in results]
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
        **extra, "models": len(results), "outcomes": dg.MetadataValue.json(outcomes),
        "table": dg.MetadataValue.md("| repo | outcome | sha |\n|---|---|---|\n" + "\n".join(rows))})


RAW_ASSETS = [ECB_ASSET, *PRICE_ASSETS, raw_hub__models]
