-- Price truth II: one meaning per column, quality in the history, offer facts, drift canaries.
-- Applied once by pipeline/storage/db.py, recorded in schema_version.

-- Offer facts parsed with every observation (pipeline/sources/offer_facts.py): NULL on rows loaded before.
ALTER TABLE price_observations ADD COLUMN gpu_share DOUBLE;               -- share of each GPU rented (a slice < 1)
ALTER TABLE price_observations ADD COLUMN gpu_memory_gib DOUBLE;          -- driver-visible per GPU device (catalog)
ALTER TABLE price_observations ADD COLUMN gpu_memory_gb_marketed DOUBLE;  -- vendor's figure per GPU device (catalog)
ALTER TABLE price_observations ADD COLUMN form_factor VARCHAR;            -- SXM, PCIe, NVL, OAM, Superchip
ALTER TABLE price_observations ADD COLUMN gpu_link VARCHAR;               -- within the instance
ALTER TABLE price_observations ADD COLUMN cluster_fabric VARCHAR;         -- across instances
ALTER TABLE price_observations ADD COLUMN cluster_gbps DOUBLE;
ALTER TABLE price_observations ADD COLUMN interconnect_source VARCHAR;
ALTER TABLE price_observations ADD COLUMN availability_status VARCHAR;    -- available, low, unavailable; NULL: unsaid
ALTER TABLE price_observations ADD COLUMN available_count INTEGER;
-- The offer-quality verdict of the observation, stamped once when it is first judged (the run that loaded it):
-- NULL = observed before quality was recorded in the history, never "fine".
ALTER TABLE price_observations ADD COLUMN quarantined BOOLEAN;
ALTER TABLE price_observations ADD COLUMN quality_reasons VARCHAR[];
ALTER TABLE price_observations ADD COLUMN eligible BOOLEAN;

ALTER TABLE offers_current ADD COLUMN gpu_share DOUBLE;
ALTER TABLE offers_current ADD COLUMN gpu_memory_gib DOUBLE;
ALTER TABLE offers_current ADD COLUMN gpu_memory_gb_marketed DOUBLE;
ALTER TABLE offers_current ADD COLUMN form_factor VARCHAR;
ALTER TABLE offers_current ADD COLUMN gpu_link VARCHAR;
ALTER TABLE offers_current ADD COLUMN cluster_fabric VARCHAR;
ALTER TABLE offers_current ADD COLUMN cluster_gbps DOUBLE;
ALTER TABLE offers_current ADD COLUMN interconnect_source VARCHAR;
ALTER TABLE offers_current ADD COLUMN availability_status VARCHAR;
ALTER TABLE offers_current ADD COLUMN available_count INTEGER;

-- `eligible` is defined once, here (it was written in five places and two of them disagreed: the published column
-- said true for 36 stale or fractional offers). Exports, `vramlab gpus` (through the published column), the setups,
-- the report and the Dagster checks all read this view. An offer is eligible when a user could rent it by the hour
-- at the listed price: the quality stage kept it (not a merged duplicate, not quarantined), its class is hourly
-- (on_demand, spot, marketplace), it names a known GPU, rents whole GPUs, has a positive price and is no
-- unconfirmed >5x jump (`eligible_when_observed`: true of the observation at its own time, which is what the
-- history keeps), and now, at the as-of time, it is neither stale nor removed (`eligible`). Without a quality
-- verdict an offer is not eligible.
ALTER TABLE offer_quality DROP COLUMN eligible;

CREATE OR REPLACE VIEW offers_judged AS
SELECT *, eligible_when_observed AND NOT stale AND NOT removed AS eligible
FROM (SELECT c.*, q.canonical_provider, q.via, q.allocation_class, q.duplicate_of, q.reference_gpu_hour_usd,
             q.ratio_to_reference, q.reasons, q.confirmed_by, q.quarantined,
             coalesce(q.duplicate_of IS NULL AND NOT q.quarantined
                      AND q.allocation_class IN ('on_demand', 'spot', 'marketplace')
                      AND c.gpu_id IS NOT NULL AND NOT c.fractional AND c.gpu_count >= 1
                      AND c.price_per_hour_usd > 0 AND NOT c.jump_unconfirmed, false) AS eligible_when_observed
      FROM offers_current c LEFT JOIN offer_quality q USING (offer_key));

-- Drift canaries (live mode): what changed in a fetch that marked its source degraded (NULL: nothing).
ALTER TABLE fetch_log ADD COLUMN drift VARCHAR[];

-- Setups say whether their offer's capacity was stated at fetch time.
ALTER TABLE cheapest_setups ADD COLUMN IF NOT EXISTS availability VARCHAR;
