"""The offer-quality stage: which current offers a user could really rent at the listed price.

Rebuilt in DuckDB after every ``offers_current`` rebuild, into ``offer_quality`` (one row per current offer, every
row kept as evidence) and ``gpu_price_reference`` (per GPU). Four steps, each a SQL statement in
``pipeline/storage/offer_quality.py``:

1. **Canonical provider and allocation class.** ``data/providers.csv`` maps source-specific provider ids to one id
   per company (``oci`` and ``oracle`` are one Oracle) and names providers whose "on-demand" rows are not hourly
   list prices: host-set ``marketplace`` quotes (Vast, Lium, Akash) and ``monthly`` dedicated servers (Hetzner).
2. **Dedupe.** One offer per (canonical provider, instance type, region, allocation class): a direct API wins over
   an aggregator's copy of the same provider (a direct row without a region covers every region of its instance
   type); the loser keeps its row with ``duplicate_of`` naming the winner.
3. **Reference price per GPU.** Median over distinct providers of each provider's median on-demand $/GPU-h (so 25
   zone copies of one aggregator row count once), among kept on-demand rows. With fewer than
   :data:`MIN_REFERENCE_PROVIDERS` providers there is no band.
4. **Quarantine** (reasons are columns): ``below_band`` / ``above_band`` (more than :data:`BAND_LOW` x below or
   :data:`BAND_HIGH` x above the reference), ``spot_reversed`` (a source's spot price above its own on-demand price for the same instance and
   region: the columns are swapped, both rows are wrong), ``placeholder`` (on-demand exactly equal to the same
   row's spot price: a filler value, e.g. 1.00 $/GPU-h on every Mithril H100/H200 row). A band outlier is trusted
   again when a second source lists the same provider's GPU within :data:`CONFIRM_TOLERANCE`, or when its own
   observations held the same price for :data:`CONFIRM_DAYS` days and it is within :data:`CONFIRM_MAX_FACTOR` of
   the reference. Reversed and placeholder rows are never confirmed by time: more of the same proves nothing.
"""

from __future__ import annotations

import csv
from datetime import datetime
from importlib import resources
from typing import Any

import duckdb
import polars as pl

from pipeline.sources.base import ALLOCATIONS, RENTABLE
from pipeline.storage import offer_quality

#: a price more than BAND_LOW times below the GPU's reference, or BAND_HIGH times above it, is quarantined. The
#: band is wider above: real list prices reach 4x the cross-provider median (Azure ND96isr H100 v5, 12.29 $/GPU-h
#: against 2.99), and a too-high price never wins a cheapest setup, while a too-low one always does.
BAND_LOW = 3.0
BAND_HIGH = 5.0
#: fewer distinct providers than this and the reference is too thin to judge anyone
MIN_REFERENCE_PROVIDERS = 3
#: a second source within this relative distance confirms a band outlier
CONFIRM_TOLERANCE = 0.15
#: an outlier whose price held this many days (and within CONFIRM_MAX_FACTOR of the reference) is confirmed
CONFIRM_DAYS = 7
CONFIRM_MAX_FACTOR = 5.0
#: sources that relay other providers' prices (a direct API of the same provider wins over them)
AGGREGATOR_PREFIXES = ("skypilot-",)
REASONS = ("below_band", "above_band", "spot_reversed", "placeholder")


def provider_table() -> pl.DataFrame:
    """``data/providers.csv``: alias -> canonical provider id and the class of its hourly rows."""
    text = (resources.files("pipeline.quality") / "data" / "providers.csv").read_text()
    rows = list(csv.DictReader(text.splitlines()))
    for row in rows:
        if row["hourly_class"] and row["hourly_class"] not in ALLOCATIONS:
            raise ValueError(f"providers.csv: {row['alias']}: unknown class {row['hourly_class']!r}")
    return pl.DataFrame({"alias": [r["alias"] for r in rows], "canonical": [r["canonical"] for r in rows],
                         "hourly_class": [r["hourly_class"] or None for r in rows]},
                        schema={"alias": pl.String, "canonical": pl.String, "hourly_class": pl.String})


def rebuild_offer_quality(con: duckdb.DuckDBPyConnection, now: datetime) -> dict[str, Any]:
    """Recompute ``offer_quality`` and ``gpu_price_reference`` from ``offers_current`` by these rules; return
    counts."""
    offer_quality.rebuild(con, now, providers=provider_table(), aggregator_prefixes=AGGREGATOR_PREFIXES,
                          rentable=RENTABLE, min_providers=MIN_REFERENCE_PROVIDERS, band_low=BAND_LOW,
                          band_high=BAND_HIGH, tolerance=CONFIRM_TOLERANCE, max_factor=CONFIRM_MAX_FACTOR,
                          days=CONFIRM_DAYS)
    return quality_counts(con)


def quality_counts(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Figures for the asset metadata and checks."""
    return offer_quality.counts(con, REASONS)
