"""Core layer, offer quality: which current offers a user could really rent at the listed price (see
:mod:`pipeline.quality.offers`). Sits between ``core__offers_current`` and the cheapest setups."""

from datetime import UTC, datetime

import dagster as dg
from dagster_duckdb import DuckDBResource

from pipeline.assets.core import CORE_GROUP, POOL, core__offers_current
from pipeline.assets.metadata import column_schema, gpu_price_series, table
from pipeline.quality.offers import REASONS, rebuild_offer_quality
from pipeline.resources import store
from pipeline.storage import offers_judged
from pipeline.storage.tables import price_reference_with_cheapest, quarantined_examples

ASSET = "core__offer_quality"
#: more quarantined offers than this share of all offers points at a broken parser or unit, not at single rows
MAX_QUARANTINED_SHARE = 0.10


def _table(rows: list[dict], columns: list[tuple[str, str]]) -> dg.TableMetadataValue:
    schema = dg.TableSchema(columns=[dg.TableColumn(name, type_) for name, type_ in columns])
    return dg.MetadataValue.table(records=[dg.TableRecord(r) for r in rows], schema=schema)


@dg.asset(name=ASSET, group_name=CORE_GROUP, pool=POOL, kinds={"duckdb"}, deps=[core__offers_current],
          tags={"vramlab/layer": "core"},
          description="Offer quality: canonical providers, allocation classes (on_demand, spot, marketplace, "
                      "monthly), one offer per (provider, instance, region, class) with a direct API winning over "
                      "an aggregator, a per-GPU cross-provider reference price, and quarantine with reasons "
                      "(below/above band, spot reversed, placeholder). Only eligible offers feed cheapest setups. "
                      "Metadata: cheapest_gpu_hour, the cheapest eligible on-demand $/GPU-hour per GPU (what "
                      "`vramlab gpus` lists, plotted for the main GPUs).",
          check_specs=[
              dg.AssetCheckSpec("quarantine_has_reason", asset=ASSET, blocking=True,
                                description="every quarantined offer names at least one reason"),
              dg.AssetCheckSpec("quarantined_offers", asset=ASSET, blocking=False,
                                description="offers kept but excluded from cheapest setups, counted per reason "
                                            f"(warns when more than {MAX_QUARANTINED_SHARE:.0%} of all offers: "
                                            "a parser or unit problem rather than single bad rows)"),
              dg.AssetCheckSpec("eligible_offers", asset=ASSET, blocking=True,
                                description="at least one offer is eligible for cheapest setups")])
def core__offer_quality(context: dg.AssetExecutionContext, duckdb: DuckDBResource) -> dg.MaterializeResult:
    with store(duckdb) as con:
        counts = rebuild_offer_quality(con, datetime.now(UTC))
        reference = price_reference_with_cheapest(con)
        examples = quarantined_examples(con)
        cheapest = offers_judged.cheapest_eligible_per_gpu(con)
        schema = column_schema(con, "offer_quality")
    per_reason = counts["per_reason"]
    ref_rows = [{"gpu": g, "providers": p, "offers": n, "median_usd_gpu_h": round(m, 4),
                 "band_low": None if lo is None else round(lo, 4), "band_high": None if hi is None else round(hi, 4),
                 "provider_min": round(mn, 4), "provider_max": round(mx, 4),
                 "cheapest_eligible": None if cp is None else round(cp, 4), "cheapest_offer": who}
                for g, p, n, m, lo, hi, mn, mx, cp, who in reference]
    source_rows = [{"source": s} | v for s, v in counts["per_source"].items()]
    example_rows = [{"source": s, "instance_type": i, "region": r, "gpu": g, "class": c, "usd_gpu_h": round(p, 4),
                     "x_reference": None if x is None else round(x, 2), "reasons": why}
                    for s, i, r, g, c, p, x, why in examples]
    checks = [
        dg.AssetCheckResult(check_name="quarantine_has_reason", asset_key=ASSET,
                            passed=counts["quarantined_without_reason"] == 0,
                            description=f"{counts['quarantined_without_reason']} quarantined offers without a reason"),
        dg.AssetCheckResult(check_name="quarantined_offers", asset_key=ASSET,
                            passed=counts["quarantined"] <= MAX_QUARANTINED_SHARE * counts["offers"],
                            severity=dg.AssetCheckSeverity.WARN,
                            description=f"{counts['quarantined']} offers quarantined "
                                        f"({', '.join(f'{k} {v}' for k, v in per_reason.items())})",
                            metadata={f"quarantined_{k}": v for k, v in per_reason.items()}
                            | {"quarantined": counts["quarantined"], "confirmed": counts["confirmed"]}),
        dg.AssetCheckResult(check_name="eligible_offers", asset_key=ASSET, passed=counts["eligible"] > 0,
                            description=f"{counts['eligible']} eligible offers"),
    ]
    context.log.info(f"offer quality: {counts['eligible']} eligible, {counts['duplicates']} duplicates merged, "
                     f"{counts['quarantined']} quarantined {per_reason}")
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": counts["offers"], "eligible_offers": counts["eligible"],
            "duplicates_merged": counts["duplicates"], "quarantined": counts["quarantined"],
            "confirmed_outliers": counts["confirmed"],
            "quarantined_per_reason": _table([{"reason": r, "offers": per_reason[r]} for r in REASONS],
                                             [("reason", "string"), ("offers", "int")]),
            "offers_per_class": _table([{"class": k, "offers": v} for k, v in counts["per_class"].items()],
                                       [("class", "string"), ("offers", "int")]),
            "offers_per_source": _table(source_rows, [("source", "string"), ("offers", "int"), ("kept", "int"),
                                                      ("duplicates", "int"), ("quarantined", "int")]),
            "reference_prices": _table(ref_rows, [("gpu", "string"), ("providers", "int"), ("offers", "int"),
                                                  ("median_usd_gpu_h", "float"), ("band_low", "float"),
                                                  ("band_high", "float"), ("provider_min", "float"),
                                                  ("provider_max", "float"), ("cheapest_eligible", "float"),
                                                  ("cheapest_offer", "string")]),
            "cheapest_gpu_hour": table(
                [("gpu", "string"), ("usd_per_gpu_hour", "float"), ("provider", "string"), ("instance", "string"),
                 ("region", "string"), ("verified_at", "string")],
                [(g, round(p, 4), prov, inst, reg, ver) for g, p, prov, inst, reg, ver, _ in cheapest]),
            **gpu_price_series(cheapest),
            "quarantine_examples": _table(example_rows, [
                ("source", "string"), ("instance_type", "string"), ("region", "string"), ("gpu", "string"),
                ("class", "string"), ("usd_gpu_h", "float"), ("x_reference", "float"), ("reasons", "string")]),
            **schema,
        },
        check_results=checks)


QUALITY_ASSETS = [core__offer_quality]
