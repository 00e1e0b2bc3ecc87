-- An offer with a NaN or infinite price is never eligible: DuckDB orders NaN above every number, so
-- `price_per_hour_usd > 0` alone let a NaN through to the setups and the report. Same view as 020 otherwise.
CREATE OR REPLACE VIEW offers_judged AS
SELECT *, eligible_when_observed AND NOT stale AND NOT removed AS eligible
FROM (SELECT c.*, q.canonical_provider, q.via, q.allocation_class, q.duplicate_of, q.reference_gpu_hour_usd,
             q.ratio_to_reference, q.reasons, q.confirmed_by, q.quarantined,
             coalesce(q.duplicate_of IS NULL AND NOT q.quarantined
                      AND q.allocation_class IN ('on_demand', 'spot', 'marketplace')
                      AND c.gpu_id IS NOT NULL AND NOT c.fractional AND c.gpu_count >= 1
                      AND c.price_per_hour_usd > 0 AND isfinite(c.price_per_hour_usd)
                      AND NOT c.jump_unconfirmed, false) AS eligible_when_observed
      FROM offers_current c LEFT JOIN offer_quality q USING (offer_key));
