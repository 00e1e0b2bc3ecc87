"""The offer-quality stage's statements, by the tables they write: ``offer_quality`` (one row per current offer,
every row kept as evidence), ``gpu_price_reference`` (per GPU) and the verdict stamped onto ``price_observations``.
The rules (band factors, thresholds, the providers table) are the quality stage's (``pipeline/quality/offers.py``)
and come in as parameters; the steps are explained there."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import duckdb
import polars as pl

from pipeline.storage.loaders import registered, transaction
from pipeline.storage.reference_prices import judge_reference_prices

_CLASSIFY = """
CREATE OR REPLACE TEMP TABLE q_base AS
SELECT o.offer_key, o.source, o.provider, coalesce(p.canonical, o.provider) AS canonical_provider,
       CASE WHEN {aggregator} THEN 'aggregator' ELSE 'direct' END AS via,
       o.instance_type, o.region, o.gpu_id, o.gpu_count, o.allocation,
       CASE WHEN o.allocation IN ('marketplace', 'marketplace_median', 'bid_statistics') THEN 'marketplace'
            WHEN o.allocation = 'monthly' THEN 'monthly'
            WHEN o.allocation = 'on_demand' AND p.hourly_class IS NOT NULL THEN p.hourly_class
            WHEN o.allocation = 'spot' THEN 'spot'
            ELSE 'on_demand' END AS allocation_class,
       o.price_per_hour_usd, o.price_per_gpu_hour_usd, o.fractional, o.removed, o.verified_at, o.first_seen
FROM offers_current o LEFT JOIN q_providers p ON p.alias = o.provider
"""

_DEDUPE = """
CREATE OR REPLACE TEMP TABLE q_kept AS
WITH exact AS (
    SELECT offer_key,
           first_value(offer_key) OVER (
               PARTITION BY canonical_provider, instance_type, coalesce(region, ''), allocation_class
               ORDER BY via = 'direct' DESC, verified_at DESC, price_per_hour_usd, offer_key) AS winner
    FROM q_base),
regionless AS (  -- a direct row without a region covers the aggregator's per-region copies of that instance
    SELECT a.offer_key, min(d.offer_key) AS winner
    FROM q_base a JOIN q_base d
      ON d.via = 'direct' AND a.via = 'aggregator' AND d.region IS NULL
     AND d.canonical_provider = a.canonical_provider AND d.instance_type = a.instance_type
     AND d.allocation_class = a.allocation_class
    GROUP BY a.offer_key)
SELECT b.*, CASE WHEN e.winner <> b.offer_key THEN e.winner ELSE r.winner END AS duplicate_of
FROM q_base b JOIN exact e USING (offer_key) LEFT JOIN regionless r USING (offer_key)
"""

_REFERENCE = """
CREATE OR REPLACE TEMP TABLE q_reference AS
WITH per_provider AS (
    SELECT gpu_id, canonical_provider, median(price_per_gpu_hour_usd) AS p, count(*) AS n
    FROM q_kept
    WHERE duplicate_of IS NULL AND allocation_class = 'on_demand' AND gpu_id IS NOT NULL AND NOT fractional
      AND NOT removed
    GROUP BY ALL)
SELECT gpu_id, count(*)::INTEGER AS providers, sum(n)::INTEGER AS offers, median(p) AS median_gpu_hour_usd,
       CASE WHEN count(*) >= $min_providers THEN median(p) / $band_low END AS band_low_usd,
       CASE WHEN count(*) >= $min_providers THEN median(p) * $band_high END AS band_high_usd,
       min(p) AS min_gpu_hour_usd, max(p) AS max_gpu_hour_usd
FROM per_provider GROUP BY gpu_id
"""

_FLAGS = """
CREATE OR REPLACE TEMP TABLE q_flags AS
WITH pairs AS (  -- a source's on-demand and spot rows of the same instance and region
    SELECT o.offer_key AS od_key, s.offer_key AS spot_key,
           o.price_per_gpu_hour_usd AS od, s.price_per_gpu_hour_usd AS spot
    FROM q_kept o JOIN q_kept s
      ON o.source = s.source AND o.instance_type = s.instance_type AND coalesce(o.region, '') = coalesce(s.region, '')
     AND o.allocation_class = 'on_demand' AND s.allocation_class = 'spot'),
paired AS (
    SELECT od_key AS offer_key, spot AS own_spot, NULL::DOUBLE AS own_od, spot > od * (1 + 1e-9) AS reversed,
           abs(spot - od) <= 1e-9 * od AS equal FROM pairs
    UNION ALL
    SELECT spot_key, NULL, od, spot > od * (1 + 1e-9), abs(spot - od) <= 1e-9 * od FROM pairs),
per_offer AS (
    SELECT offer_key, max(own_spot) AS own_spot, max(own_od) AS own_od, bool_or(reversed) AS reversed,
           bool_or(equal) AS equal
    FROM paired GROUP BY offer_key)
SELECT k.*, r.median_gpu_hour_usd AS reference, r.providers AS reference_providers,
       k.price_per_gpu_hour_usd / r.median_gpu_hour_usd AS ratio,
       p.own_spot, p.own_od,
       coalesce(k.allocation_class = 'on_demand' AND k.price_per_gpu_hour_usd < r.band_low_usd, false) AS below_band,
       coalesce(k.allocation_class = 'on_demand' AND k.price_per_gpu_hour_usd > r.band_high_usd, false) AS above_band,
       coalesce(p.reversed, false) AS spot_reversed,
       coalesce(p.equal, false) AS placeholder
FROM q_kept k LEFT JOIN q_reference r USING (gpu_id) LEFT JOIN per_offer p USING (offer_key)
"""

_CONFIRM = """
CREATE OR REPLACE TEMP TABLE q_confirmed AS
WITH outliers AS (SELECT * FROM q_flags WHERE below_band OR above_band),
second_source AS (
    SELECT o.offer_key FROM outliers o JOIN q_flags x
      ON x.source <> o.source AND x.canonical_provider = o.canonical_provider AND x.gpu_id = o.gpu_id
     AND x.allocation_class = o.allocation_class
     AND abs(x.price_per_gpu_hour_usd - o.price_per_gpu_hour_usd) <= $tolerance * o.price_per_gpu_hour_usd
    GROUP BY o.offer_key),
held AS (  -- the same price seen on several days over at least CONFIRM_DAYS
    SELECT o.offer_key FROM outliers o JOIN price_observations h USING (offer_key)
    WHERE o.ratio BETWEEN 1 / $max_factor AND $max_factor
      AND abs(h.price_per_gpu_hour_usd - o.price_per_gpu_hour_usd) <= 1e-9 * o.price_per_gpu_hour_usd
    GROUP BY o.offer_key
    HAVING count(DISTINCT date_trunc('day', h.observed_at)) >= 3
       AND max(h.observed_at) - min(h.observed_at) >= to_days($days))
SELECT offer_key, 'second_source' AS confirmed_by FROM second_source
UNION ALL
SELECT offer_key, 'observations' FROM held WHERE offer_key NOT IN (SELECT offer_key FROM second_source)
"""

_WRITE = """
INSERT INTO offer_quality
SELECT f.offer_key, f.source, f.provider, f.canonical_provider, f.via, f.instance_type, f.region, f.gpu_id,
       f.gpu_count, f.allocation, f.allocation_class, f.price_per_hour_usd, f.price_per_gpu_hour_usd,
       f.price_per_hour_usd * 730, f.duplicate_of, f.reference, f.reference_providers, f.ratio, f.own_spot, f.own_od,
       f.below_band, f.above_band, f.spot_reversed, f.placeholder,
       list_filter([CASE WHEN f.below_band THEN 'below_band' END, CASE WHEN f.above_band THEN 'above_band' END,
                    CASE WHEN f.spot_reversed THEN 'spot_reversed' END,
                    CASE WHEN f.placeholder THEN 'placeholder' END], lambda x: x IS NOT NULL) AS reasons,
       c.confirmed_by,
       (f.spot_reversed OR f.placeholder OR ((f.below_band OR f.above_band) AND c.confirmed_by IS NULL)) AS quarantined,
       $now
FROM q_flags f LEFT JOIN q_confirmed c USING (offer_key)
"""


#: the verdict goes into the history too (else every historical minimum includes quarantined placeholders):
#: each offer's current observation is stamped once, when first judged, with the ``offers_judged`` view's verdict
#: (sql/020, the one definition) as of the observation's own time: ``eligible_when_observed`` (an observation is
#: fresh and listed when it is made; stale and removed are judged against "now" and belong to current offers)
_STAMP_HISTORY = """
UPDATE price_observations p
SET quarantined = coalesce(j.quarantined, false), quality_reasons = coalesce(j.reasons, []),
    eligible = j.eligible_when_observed
FROM offers_judged j
WHERE p.offer_key = j.offer_key AND p.observed_at = j.last_seen AND p.eligible IS NULL
"""

#: every other observation still without a verdict (loaded after a newer one of its offer, e.g. by a history
#: backfill; loaded by a run whose quality step failed; carried over by an upgrade or a rebuild) is judged too, so
#: none stays unjudged past a quality run: by the observation's own facts (a known GPU, whole GPUs, a positive
#: finite price) and its offer's current dedupe and quarantine verdict; an observation of an offer the quality
#: stage has no verdict for is not eligible. NULL therefore only ever means "not judged yet", and readers treat
#: it as not eligible.
_STAMP_UNJUDGED = """
UPDATE price_observations p
SET quarantined = coalesce(j.quarantined, false), quality_reasons = coalesce(j.reasons, []),
    eligible = coalesce(j.duplicate_of IS NULL AND NOT j.quarantined
                        AND j.allocation_class IN {rentable}
                        AND p.gpu_id IS NOT NULL AND NOT p.fractional AND p.gpu_count >= 1
                        AND p.price_per_hour_usd > 0 AND isfinite(p.price_per_hour_usd), false)
FROM (SELECT o.offer_key, q.quarantined, q.reasons, q.duplicate_of, q.allocation_class
      FROM (SELECT DISTINCT offer_key FROM price_observations WHERE eligible IS NULL) o
      LEFT JOIN offer_quality q USING (offer_key)) j
WHERE p.offer_key = j.offer_key AND p.eligible IS NULL
"""


def rebuild(con: duckdb.DuckDBPyConnection, now: datetime, *, providers: pl.DataFrame,
            aggregator_prefixes: Sequence[str], rentable: tuple[str, ...], min_providers: int, band_low: float,
            band_high: float, tolerance: float, max_factor: float, days: int) -> None:
    """Replace ``offer_quality`` and ``gpu_price_reference`` from ``offers_current`` in one transaction and stamp
    the verdict onto the observations still without one. ``providers``: alias -> canonical provider and hourly
    class (``data/providers.csv``); a source whose name starts with one of ``aggregator_prefixes`` relays others'
    prices; ``rentable``: the allocation classes an eligible observation may have."""
    aggregator = " OR ".join(f"o.source LIKE '{p}%'" for p in aggregator_prefixes)
    with registered(con, "q_providers", providers):
        with transaction(con):
            con.execute(_CLASSIFY.format(aggregator=aggregator))
            con.execute(_DEDUPE)
            con.execute(_REFERENCE, {"min_providers": min_providers, "band_low": band_low, "band_high": band_high})
            con.execute(_FLAGS)
            con.execute(_CONFIRM, {"tolerance": tolerance, "max_factor": max_factor, "days": days})
            con.execute("DELETE FROM offer_quality")
            con.execute(_WRITE, {"now": now})
            # reference prices have no current offer to be judged through: by their own facts and the day's band
            judge_reference_prices(con, band_low=band_low, band_high=band_high, min_providers=min_providers)
            con.execute(_STAMP_HISTORY)
            con.execute(_STAMP_UNJUDGED.format(rentable=rentable))
            con.execute("DELETE FROM gpu_price_reference")
            con.execute("INSERT INTO gpu_price_reference SELECT *, $now FROM q_reference", {"now": now})
            for table in ("q_base", "q_kept", "q_reference", "q_flags", "q_confirmed"):
                con.execute(f"DROP TABLE IF EXISTS {table}")


def counts(con: duckdb.DuckDBPyConnection, reasons: Sequence[str]) -> dict[str, Any]:
    """Figures of ``offer_quality`` for the asset metadata and checks (``reasons``: the quarantine reason columns
    counted one by one)."""
    total, dupes, quarantined, confirmed = con.execute("""
        SELECT count(*), count(*) FILTER (WHERE duplicate_of IS NOT NULL), count(*) FILTER (WHERE quarantined),
               count(*) FILTER (WHERE confirmed_by IS NOT NULL)
        FROM offer_quality""").fetchall()[0]
    eligible = con.execute("SELECT count(*) FILTER (WHERE eligible) FROM offers_judged").fetchall()[0][0]
    per_reason = {r: con.execute(f"SELECT count(*) FROM offer_quality WHERE quarantined AND {r}").fetchall()[0][0]
                  for r in reasons}
    per_class = dict(con.execute("SELECT allocation_class, count(*) FROM offer_quality GROUP BY ALL ORDER BY 1")
                     .fetchall())
    per_source = {row[0]: {"offers": row[1], "kept": row[2], "duplicates": row[3], "quarantined": row[4]}
                  for row in con.execute("""
        SELECT source, count(*), count(*) FILTER (WHERE duplicate_of IS NULL),
               count(*) FILTER (WHERE duplicate_of IS NOT NULL), count(*) FILTER (WHERE quarantined)
        FROM offer_quality GROUP BY source ORDER BY source""").fetchall()}
    unexplained = con.execute("SELECT count(*) FROM offer_quality WHERE quarantined AND len(reasons) = 0"
                              ).fetchall()[0][0]
    return {"offers": total, "duplicates": dupes, "quarantined": quarantined, "confirmed": confirmed,
            "eligible": eligible, "per_reason": per_reason, "per_class": per_class, "per_source": per_source,
            "quarantined_without_reason": unexplained}
