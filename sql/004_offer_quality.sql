-- Offer quality: one row per current offer (losers of the dedupe and quarantined rows kept as evidence),
-- and the per-GPU cross-provider reference price the plausibility band is drawn around.
-- Filled by pipeline/quality/offers.py after every offers_current rebuild.

CREATE TABLE IF NOT EXISTS offer_quality (
    offer_key               VARCHAR PRIMARY KEY,
    source                  VARCHAR NOT NULL,
    provider                VARCHAR NOT NULL,   -- as the source names it
    canonical_provider      VARCHAR NOT NULL,   -- one id per company (oci and oracle -> oracle)
    via                     VARCHAR NOT NULL,   -- direct | aggregator
    instance_type           VARCHAR NOT NULL,
    region                  VARCHAR,
    gpu_id                  VARCHAR,
    gpu_count               DOUBLE NOT NULL,
    allocation              VARCHAR NOT NULL,   -- as the source labels it
    allocation_class        VARCHAR NOT NULL,   -- on_demand | spot | marketplace | monthly
    price_per_hour_usd      DOUBLE NOT NULL,
    price_per_gpu_hour_usd  DOUBLE NOT NULL,
    price_per_month_usd     DOUBLE NOT NULL,    -- 730 h; for monthly offers the price as billed
    duplicate_of            VARCHAR,            -- the offer that won the dedupe (NULL: this row is the one kept)
    reference_gpu_hour_usd  DOUBLE,             -- median of distinct providers' on-demand $/GPU-h for this GPU
    reference_providers     INTEGER,
    ratio_to_reference      DOUBLE,
    own_spot_gpu_hour_usd   DOUBLE,             -- the same source's spot price for the same instance and region
    own_on_demand_gpu_hour_usd DOUBLE,          -- (on spot rows) the same source's on-demand price
    below_band              BOOLEAN NOT NULL,   -- price < reference / band factor
    above_band              BOOLEAN NOT NULL,   -- price > reference x band factor
    spot_reversed           BOOLEAN NOT NULL,   -- spot above its own on-demand price (columns swapped)
    placeholder             BOOLEAN NOT NULL,   -- on-demand equal to its own spot price (a filler value)
    reasons                 VARCHAR[] NOT NULL, -- the flags above by name; empty when none
    confirmed_by            VARCHAR,            -- second_source | observations: why a band outlier is trusted
    quarantined             BOOLEAN NOT NULL,   -- has a reason and is not confirmed: never in cheapest setups
    eligible                BOOLEAN NOT NULL,   -- feeds cheapest setups (kept, not quarantined, hourly-rentable)
    computed_at             TIMESTAMPTZ NOT NULL
);

CREATE TABLE IF NOT EXISTS gpu_price_reference (
    gpu_id                  VARCHAR PRIMARY KEY,
    providers               INTEGER NOT NULL,   -- distinct canonical providers with an on-demand offer
    offers                  INTEGER NOT NULL,
    median_gpu_hour_usd     DOUBLE NOT NULL,    -- median over providers of each provider's median (zone copies collapsed)
    band_low_usd            DOUBLE,             -- NULL when too few providers to judge
    band_high_usd           DOUBLE,
    min_gpu_hour_usd        DOUBLE NOT NULL,
    max_gpu_hour_usd        DOUBLE NOT NULL,
    computed_at             TIMESTAMPTZ NOT NULL
);

-- What a user would really deploy (pipeline/compute/setups.py): nodes, how they are joined, format support.
ALTER TABLE cheapest_setups ADD COLUMN IF NOT EXISTS nodes INTEGER;
ALTER TABLE cheapest_setups ADD COLUMN IF NOT EXISTS deployment VARCHAR;      -- single_machine | cluster | llama.cpp-rpc
ALTER TABLE cheapest_setups ADD COLUMN IF NOT EXISTS interconnect VARCHAR;    -- the cluster fabric (multi-node only)
ALTER TABLE cheapest_setups ADD COLUMN IF NOT EXISTS native_support BOOLEAN;
ALTER TABLE cheapest_setups ADD COLUMN IF NOT EXISTS support_note VARCHAR;
ALTER TABLE cheapest_setups ADD COLUMN IF NOT EXISTS flags VARCHAR[];
ALTER TABLE cheapest_setups ADD COLUMN IF NOT EXISTS fx_stale BOOLEAN;   -- converted with an ECB rate > 4 days old
