"""The verdict of reference prices (:data:`pipeline.sources.base.REFERENCE`: a third party's record of the cheapest
price it saw at a provider at one time). They are never current offers, so the offer-quality stage, which judges an
observation through its current offer, has nothing to judge them by: it judges them here instead
(``quality/offers.rebuild_offer_quality``, every run that loads observations), once each, by their own facts and
against the other providers' records of the same GPU on the same UTC day:

- facts: a known GPU, whole GPUs, a positive finite price (what every eligible observation has);
- band: an on-demand record more than ``band_low`` x below or ``band_high`` x above the median over providers of
  each provider's median record of that GPU that day (with at least ``min_providers`` providers) is quarantined
  with the quality stage's reasons, ``below_band`` / ``above_band``; a marketplace record is not banded, as the
  quality stage bands on-demand prices only.

An eligible reference price counts in the price history (``vramlab history``, the report's charts) and nowhere else.
"""

from __future__ import annotations

import duckdb

from pipeline.sources.base import REFERENCE

_JUDGE = """
UPDATE price_observations p
SET quarantined = v.below OR v.above,
    quality_reasons = list_filter([CASE WHEN v.below THEN 'below_band' END, CASE WHEN v.above THEN 'above_band' END],
                                  lambda x: x IS NOT NULL),
    eligible = v.facts AND NOT (v.below OR v.above)
FROM (
    WITH todo AS (
        SELECT offer_key, observed_at, gpu_id, allocation, price_per_gpu_hour_usd AS price,
               (observed_at AT TIME ZONE 'UTC')::DATE AS day,
               coalesce(gpu_id IS NOT NULL AND NOT fractional AND gpu_count >= 1 AND price_per_hour_usd > 0
                        AND isfinite(price_per_hour_usd), false) AS facts
        FROM price_observations
        WHERE allocation IN (SELECT UNNEST($reference::VARCHAR[])) AND eligible IS NULL),
    per_provider AS (
        SELECT (observed_at AT TIME ZONE 'UTC')::DATE AS day, gpu_id, provider,
               median(price_per_gpu_hour_usd) AS price
        FROM price_observations
        WHERE allocation IN (SELECT UNNEST($banded::VARCHAR[])) AND gpu_id IS NOT NULL AND NOT fractional
        GROUP BY ALL),
    band AS (SELECT day, gpu_id, median(price) AS median, count(*) AS providers FROM per_provider GROUP BY ALL)
    SELECT t.offer_key, t.observed_at, t.facts,
           coalesce(t.allocation IN (SELECT UNNEST($banded::VARCHAR[])) AND b.providers >= $min_providers
                    AND t.price < b.median / $band_low, false) AS below,
           coalesce(t.allocation IN (SELECT UNNEST($banded::VARCHAR[])) AND b.providers >= $min_providers
                    AND t.price > b.median * $band_high, false) AS above
    FROM todo t LEFT JOIN band b USING (day, gpu_id)) v
WHERE p.offer_key = v.offer_key AND p.observed_at = v.observed_at
"""


def judge_reference_prices(con: duckdb.DuckDBPyConnection, *, band_low: float, band_high: float,
                           min_providers: int) -> int:
    """Stamp the verdict on every reference price not judged yet; return how many were judged."""
    reference = list(REFERENCE)
    banded = [a for a, rentable in REFERENCE.items() if rentable == "on_demand"]
    todo = con.execute("SELECT count(*) FROM price_observations WHERE allocation IN (SELECT UNNEST(?::VARCHAR[])) "
                       "AND eligible IS NULL", [reference]).fetchall()[0][0]
    if todo:
        con.execute(_JUDGE, {"reference": reference, "banded": banded, "min_providers": min_providers,
                             "band_low": band_low, "band_high": band_high})
    return todo
