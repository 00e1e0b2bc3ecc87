"""Core layer: the DuckDB tables. Every asset here opens DuckDB and is in the ``duckdb`` pool (limit 1 in
dagster.yaml), so two runs never hold write connections at once. Blocking checks are computed in the asset body
(one DuckDB connection, no separate check step) and stop downstream assets when they fail."""

import subprocess
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
from dagster_duckdb import DuckDBResource

from pipeline.assets.metadata import column_schema, table
from pipeline.assets.raw import ECB_ASSET, PRICE_ASSETS, raw_hub__models
from pipeline.ingest.prices import latest_rates
from pipeline.resources import VramlabSettings, store
from pipeline.sources.huggingface import HubModel, HubState, discovered_entries, load_watchlist
from pipeline.sources.landing import read_log_report
from pipeline.storage.checkpoints import load_checkpoint_headers
from pipeline.storage.db import table_columns
from pipeline.storage.loaders import (
    FACT_COLUMNS,
    PRICE_CEILING,
    QUALITY_COLUMNS,
    STALE_AFTER,
    UNMAPPED_CEILING,
    load_fetch_log,
    load_gpus,
    load_models,
    load_observations_detailed,
    mark_loaded,
    offers_from_landing,
    pending_fetches,
    rebuild_current,
    source_fingerprints,
    source_freshness,
)
from pipeline.storage.tables import (
    cheapest_on_demand_per_gpu,
    current_prices,
    duplicate_observations,
    ignored_rows_latest_fetch,
    implausible_prices,
    model_ids,
    observations_per_source,
    row_count,
    unconfirmed_jumps,
)

CORE_GROUP = "core"
POOL = "duckdb"
__all__ = ["PRICE_CEILING", "UNMAPPED_CEILING"]  # defined with the loader that quarantines by them

OBS_COLUMNS = ["offer_key", "observed_hour", "observed_at", "source", "provider", "instance_type", "region", "zone",
               "gpu_name", "gpu_id", "gpu_count", "fractional", "gpu_memory_gb", "vcpus", "ram_gb", "currency",
               "price_per_hour", "price_per_gpu_hour", "price_per_hour_usd", "price_per_gpu_hour_usd", "unit",
               "unit_scale", "fx_rate", "fx_date", "allocation", "availability", "mapping_version", "raw_sha256",
               *FACT_COLUMNS, *QUALITY_COLUMNS]


def code_version() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def staleness_text(warn: list[dict], old: list[dict], live: bool) -> str:
    """What ``source_staleness`` says, different for each verdict: passed (every source within 2 h), a warning
    (live: older than 2 h but none over 24 h, named; replay: old recordings keep their capture dates, named with
    them, never a failure) and a failure (live: the sources silent for over 24 h, named)."""
    text = f"{len(warn)} sources older than 2 h, {len(old)} older than 24 h"
    if not warn:
        return f"{text}: every source verified within the last 2 hours (passes)"
    if not live:
        dates = ", ".join(f"{f['source']} {str(f['verified_at'] or '?')[:10]}"
                          for f in sorted(warn, key=lambda f: str(f["verified_at"] or "")))
        return (f"{text}: replayed recordings keep their capture dates ({dates}); a warning, never a failure "
                "in replay")
    if old:
        return (f"{text}: fails, silent for over 24 hours: {', '.join(sorted(f['source'] for f in old))} "
                "(their offers are stale and left out of cheapest setups)")
    return (f"{text}: warns, older than 2 hours but none over 24: {', '.join(sorted(f['source'] for f in warn))} "
            "(their offers are stale and left out of cheapest setups until fetched again)")


def _check(name: str, asset: str, passed: bool, description: str, severity=dg.AssetCheckSeverity.ERROR,
           **metadata) -> dg.AssetCheckResult:  # type: ignore[no-untyped-def]
    return dg.AssetCheckResult(check_name=name, asset_key=asset, passed=bool(passed), severity=severity,
                               description=description, metadata=metadata)


@dg.asset(name="core__fetch_log", group_name=CORE_GROUP, pool=POOL, kinds={"duckdb"},
          deps=[ECB_ASSET, *PRICE_ASSETS], tags={"vramlab/layer": "core"},
          description="Every fetch attempt of every price source, with its outcome (from data/raw/fetch_log.jsonl).")
def core__fetch_log(context: dg.AssetExecutionContext, vramlab: VramlabSettings,
                    duckdb: DuckDBResource) -> dg.MaterializeResult:
    report = read_log_report(vramlab.settings.data_dir)
    for number, text in report.torn:
        context.log.warning(f"raw/fetch_log.jsonl line {number} is torn (a crash or a full disk?), skipped: {text!r}")
    kept = [(e, n) for e, n in zip(report.entries, report.lines, strict=True) if not e.source.startswith("hub:")]
    with store(duckdb) as con:  # the price sources' attempts (the Hub's are loaded by core__models, after its step)
        new = load_fetch_log(con, [e for e, _ in kept], [n for _, n in kept])
        total = row_count(con, "fetch_log")
        schema = column_schema(con, "fetch_log")
        # rows of each source's latest fetch that are not GPU offers (CPU plans, other terms), by reason
        ignored = ignored_rows_latest_fetch(con)
    return dg.MaterializeResult(metadata={"dagster/row_count": total, "new_attempts": len(new), **schema,
                                          "torn_log_lines": dg.MetadataValue.json([n for n, _ in report.torn]),
                                          "ignored_rows_latest_fetch": dg.MetadataValue.json(ignored)})


@dg.asset(name="core__price_observations", group_name=CORE_GROUP, pool=POOL, kinds={"duckdb"},
          deps=[core__fetch_log], tags={"vramlab/layer": "core"},
          description="Append-only price observations, one per offer per hour, parsed from the landed payloads.",
          check_specs=[dg.AssetCheckSpec(n, asset="core__price_observations", blocking=True, description=d) for n, d in (
              ("schema", "columns are exactly those of sql/001_prices.sql, 006 and 020"),
              ("non_empty", "at least one observation"),
              ("prices_sane", "prices loaded by this run are > 0 and below a per-GPU-kind ceiling per GPU-hour "
                              "(implausible ones are quarantined at load, so history never blocks a run)"),
              ("no_duplicates", "no two rows for the same (source, offer, observed_at)"))] + [
              dg.AssetCheckSpec("quarantined_prices", asset="core__price_observations", blocking=False,
                                description="prices of this run held in price_quarantine (<= 0 or above the "
                                            "ceiling); kept out of offers, never blocking"),
              dg.AssetCheckSpec("landing_readable", asset="core__price_observations", blocking=False,
                                description="every pending landed fetch parsed; one that does not stays pending "
                                            "(a parser fix picks it up) without blocking the others")])
def core__price_observations(context: dg.AssetExecutionContext, vramlab: VramlabSettings,
                             duckdb: DuckDBResource) -> dg.MaterializeResult:
    s = vramlab.settings
    rates = latest_rates(s.data_dir)
    with store(duckdb) as con:
        pending = pending_fetches(con)
        parsed = offers_from_landing(pending, rates, s.data_dir)
        for source, started, raw_path, reason in parsed.failed:
            context.log.warning(f"{source} fetch of {started:%Y-%m-%d %H:%M:%S} ({raw_path}) not parsed: {reason}")
        loaded = load_observations_detailed(con, parsed)
        mark_loaded(con, parsed.parsed, datetime.now(UTC))
        columns = table_columns(con, "price_observations")
        total = row_count(con, "price_observations")
        # only what this run loaded: a bad row of the past never blocks later runs
        insane = implausible_prices(con, [(p[0], p[1]) for p in parsed.parsed])
        dupes = duplicate_observations(con)
        per_source = observations_per_source(con)
        schema = column_schema(con, "price_observations")
    held = loaded["quarantine"]
    checks = [
        _check("schema", "core__price_observations", columns == OBS_COLUMNS, f"columns: {columns}"),
        _check("non_empty", "core__price_observations", total > 0, f"{total} rows"),
        _check("prices_sane", "core__price_observations", not insane,
               f"{len(insane)} prices loaded by this run out of range" + (f", e.g. {insane[:3]}" if insane else "")),
        _check("no_duplicates", "core__price_observations", not dupes, f"{len(dupes)} duplicated observations"),
        _check("quarantined_prices", "core__price_observations", not held,
               f"{loaded['quarantined']} prices quarantined by this run", severity=dg.AssetCheckSeverity.WARN,
               quarantine=dg.MetadataValue.json([list(h) for h in held])),
        _check("landing_readable", "core__price_observations", not parsed.failed,
               f"{len(parsed.failed)} landed fetches could not be parsed (left pending)",
               severity=dg.AssetCheckSeverity.WARN,
               failed=dg.MetadataValue.json([[a, str(b), c, d[:300]] for a, b, c, d in parsed.failed[:20]])),
    ]
    return dg.MaterializeResult(
        metadata={"dagster/row_count": total, "new_observations": loaded["added"], "fetches_loaded": len(parsed.parsed),
                  "fetches_failed": len(parsed.failed), "quarantined": loaded["quarantined"],
                  "rows_per_source": dg.MetadataValue.json(per_source),
                  "data_dir": dg.MetadataValue.path(str(s.data_dir)), "database": dg.MetadataValue.path(str(s.db_path)),
                  **schema},
        check_results=checks)


@dg.asset(name="core__offers_current", group_name=CORE_GROUP, pool=POOL, kinds={"duckdb"},
          deps=[core__price_observations], tags={"vramlab/layer": "core"},
          freshness_policy=dg.FreshnessPolicy.time_window(fail_window=STALE_AFTER,
                                                          warn_window=STALE_AFTER * 0.75),
          description="Latest observation per offer with first/last seen, verification time, stale/removed flags "
                      "and unconfirmed >5x price jumps; also appends price_changes. Freshness: a warning when "
                      "not materialized for 90 minutes, a failure after 2 hours; metadata: cheapest $/GPU-hour per GPU "
                      "before the quality stage (the rentable cheapest is core__offer_quality's "
                      "cheapest_gpu_hour), source outcomes.",
          check_specs=[
              dg.AssetCheckSpec("price_jumps", asset="core__offers_current", blocking=False,
                                description="offers whose price moved >5x since the previous observation "
                                            "(kept, excluded from cheapest setups until confirmed)"),
              dg.AssetCheckSpec("source_staleness", asset="core__offers_current", blocking=False,
                                description="per source: a last verification older than 2 h warns (the offers "
                                            "turn stale), older than 24 h fails (live; in replay old recordings "
                                            "only warn)"),
              dg.AssetCheckSpec("source_drift", asset="core__offers_current", blocking=False,
                                description="no source's last live fetch tripped a drift canary (unknown shape, new "
                                            "enum values, >50% fewer offers); a degraded source keeps its last "
                                            "good offers, which turn stale")])
def core__offers_current(context: dg.AssetExecutionContext, vramlab: VramlabSettings,
                         duckdb: DuckDBResource) -> dg.MaterializeResult:
    as_of = vramlab.as_of()
    with store(duckdb) as con:
        before = current_prices(con)
        counts = rebuild_current(con, as_of)
        after = current_prices(con, listed_only=True)
        jumps = unconfirmed_jumps(con)
        cheapest = cheapest_on_demand_per_gpu(con)
        freshness = source_freshness(con, as_of)
        fingerprints = source_fingerprints(con)
        schema = column_schema(con, "offers_current")
    new = sorted(set(after) - set(before))
    changed = sorted(k for k in set(after) & set(before) if after[k] != before[k])
    removed = sorted(set(before) - set(after))
    old = [f for f in freshness if f["age_hours"] is None or f["age_hours"] > 24]
    warn = [f for f in freshness if f["stale"]]
    degraded = [f for f in freshness if f["degraded"]]
    provenance = {"code_version": code_version(), "as_of": as_of.isoformat(), "mode": "live" if vramlab.live else
                  "replay", "source_sha256": fingerprints}
    checks = [
        _check("price_jumps", "core__offers_current", not jumps, f"{len(jumps)} unconfirmed jumps",
               severity=dg.AssetCheckSeverity.WARN, offers=dg.MetadataValue.json([list(map(str, j)) for j in jumps])),
        _check("source_staleness", "core__offers_current", not warn, staleness_text(warn, old, vramlab.live),
               # replayed recordings keep their real capture dates, so some are old by design: a warning naming
               # them, never a failure (live, a source silent for over 24 h fails the check)
               severity=dg.AssetCheckSeverity.ERROR if old and vramlab.live else dg.AssetCheckSeverity.WARN,
               stale_sources=dg.MetadataValue.json([f["source"] for f in warn])),
        _check("source_drift", "core__offers_current", not degraded, f"{len(degraded)} sources degraded",
               severity=dg.AssetCheckSeverity.WARN, degraded=dg.MetadataValue.json(
                   {f["source"]: f["drift"] for f in degraded})),
    ]
    context.log.info(f"offers: {counts}; new {len(new)}, changed {len(changed)}, removed {len(removed)}")
    return dg.MaterializeResult(
        metadata={"dagster/row_count": counts["offers"], "new_offers": len(new), "changed_offers": len(changed),
                  "removed_offers": len(removed), "stale_offers": counts["stale"],
                  "unconfirmed_jumps": counts["jumps"], "as_of": dg.MetadataValue.timestamp(as_of),
                  "source_outcomes": table(
                      [("source", "string"), ("last_outcome", "string"), ("verified_at", "string"),
                       ("age_hours", "float"), ("stale", "bool"), ("degraded", "bool"), ("drift", "string")],
                      [(f["source"], f["last_outcome"], f["verified_at"],
                        None if f["age_hours"] is None else round(f["age_hours"], 1), bool(f["stale"]),
                        bool(f["degraded"]), "; ".join(f["drift"])[:500])
                       for f in freshness]),
                  # before the quality stage: may name offers core__offer_quality quarantines or merges as
                  # duplicates; the rentable cheapest per GPU (what `vramlab gpus` lists) is core__offer_quality's
                  # cheapest_gpu_hour
                  "cheapest_gpu_hour_before_quality": table(
                      [("gpu", "string"), ("usd_per_gpu_hour", "float"), ("provider", "string"),
                       ("instance", "string"), ("region", "string"), ("verified_at", "string")],
                      [(g, round(p, 4), prov, inst, reg, ver) for g, p, prov, inst, reg, ver in cheapest]),
                  "provenance": dg.MetadataValue.json(provenance), **schema},
        check_results=checks)


@dg.asset(name="core__gpus", group_name=CORE_GROUP, pool=POOL, kinds={"duckdb"}, tags={"vramlab/layer": "core"},
          description="The GPU catalog (sizing_core/data/gpus.csv) with usable memory and a row hash per GPU.",
          check_specs=[dg.AssetCheckSpec("non_empty", asset="core__gpus", blocking=True)])
def core__gpus(duckdb: DuckDBResource) -> dg.MaterializeResult:
    with store(duckdb) as con:
        n = load_gpus(con)
        schema = column_schema(con, "gpus")
    return dg.MaterializeResult(metadata={"dagster/row_count": n, **schema},
                                check_results=[_check("non_empty", "core__gpus", n >= 50, f"{n} GPUs")])


@dg.asset(name="core__models", group_name=CORE_GROUP, pool=POOL, kinds={"duckdb"}, deps=[raw_hub__models],
          tags={"vramlab/layer": "core"},
          description="Tracked models (watchlist facts, current Hub sha, derived facts) and every Hub revision seen.",
          check_specs=[dg.AssetCheckSpec("watchlist_complete", asset="core__models", blocking=True,
                                         description="every watchlist model has a row")])
def core__models(vramlab: VramlabSettings, duckdb: DuckDBResource) -> dg.MaterializeResult:
    s = vramlab.settings
    state = HubState(s.data_dir)
    watchlist = load_watchlist(data_dir=s.data_dir)
    report = read_log_report(s.data_dir)
    hub = [(e, n) for e, n in zip(report.entries, report.lines, strict=True) if e.source.startswith("hub:")]
    last_log = {e.source: e for e, _ in hub}
    # the watchlist and the discovered repos, as tracked_models sizes them (the published models table promises
    # every tracked model; discovered ones were missing from it)
    results = [(entry, last_log.get(f"hub:{entry.repo}"), None if entry.spec else state.latest(entry.repo))
               for entry in [*watchlist.models, *discovered_entries(s.data_dir)]]
    revisions = [HubModel.model_validate_json(p.read_text()) for p in state.revision_records()]
    with store(duckdb) as con:
        # every Hub attempt in DuckDB's fetch_log too (source hub:<repo>): a failed one is not only in the file
        load_fetch_log(con, [e for e, _ in hub], [n for _, n in hub])
        counts = load_models(con, results, revisions, datetime.now(UTC))
        counts |= load_checkpoint_headers(con, revisions)  # safetensors headers per revision
        present = model_ids(con)
        schema = column_schema(con, "models")
    missing = [e.id for e in watchlist.models if e.id not in present]
    return dg.MaterializeResult(
        metadata={"dagster/row_count": counts["models"], "new_revisions": counts["new_revisions"],
                  "checkpoint_revisions": counts["checkpoint_revisions"],
                  "checkpoint_disagreements": counts["checkpoint_disagreements"], **schema},
        check_results=[_check("watchlist_complete", "core__models", not missing, f"missing: {missing}")])


CORE_ASSETS = [core__fetch_log, core__price_observations, core__offers_current, core__gpus, core__models]
