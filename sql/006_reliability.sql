-- Reliability. Applied once by pipeline/storage/db.py, recorded in schema_version.

-- Prices that cannot be true (<= 0, or above the per-GPU-kind ceiling of pipeline/assets/core.py) are kept here
-- instead of in price_observations: nothing observed is lost (the raw landing keeps the payload too), and one
-- impossible price never blocks publishing of the healthy ones.
CREATE TABLE IF NOT EXISTS price_quarantine (
    offer_key               VARCHAR NOT NULL,
    observed_at             TIMESTAMPTZ NOT NULL,
    source                  VARCHAR NOT NULL,
    instance_type           VARCHAR NOT NULL,
    gpu_id                  VARCHAR,
    allocation              VARCHAR NOT NULL,
    price_per_hour_usd      DOUBLE NOT NULL,
    price_per_gpu_hour_usd  DOUBLE NOT NULL,
    reason                  VARCHAR NOT NULL,
    raw_sha256              VARCHAR,
    quarantined_at          TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (offer_key, observed_at)
);

-- price_observations keyed on (offer_key, observed_at) instead of (offer_key, observed_hour): a price change
-- within the same hour is a new row (an unchanged price within the hour still adds none; see
-- pipeline/storage/loaders.py load_observations). Same columns, same order.
CREATE TABLE price_observations_006 (
    offer_key               VARCHAR NOT NULL,
    observed_hour           TIMESTAMPTZ NOT NULL,
    observed_at             TIMESTAMPTZ NOT NULL,
    source                  VARCHAR NOT NULL,
    provider                VARCHAR NOT NULL,
    instance_type           VARCHAR NOT NULL,
    region                  VARCHAR,
    zone                    VARCHAR,
    gpu_name                VARCHAR NOT NULL,
    gpu_id                  VARCHAR,
    gpu_count               DOUBLE NOT NULL,
    fractional              BOOLEAN NOT NULL,
    gpu_memory_gb           DOUBLE,
    vcpus                   DOUBLE,
    ram_gb                  DOUBLE,
    currency                VARCHAR NOT NULL,
    price_per_hour          DOUBLE NOT NULL,
    price_per_gpu_hour      DOUBLE NOT NULL,
    price_per_hour_usd      DOUBLE NOT NULL,
    price_per_gpu_hour_usd  DOUBLE NOT NULL,
    unit                    VARCHAR NOT NULL,
    unit_scale              VARCHAR NOT NULL,
    fx_rate                 DOUBLE NOT NULL,
    fx_date                 VARCHAR,
    allocation              VARCHAR NOT NULL,
    availability            VARCHAR,
    mapping_version         VARCHAR NOT NULL,
    raw_sha256              VARCHAR,
    PRIMARY KEY (offer_key, observed_at)
);
INSERT INTO price_observations_006 SELECT * FROM price_observations;
DROP TABLE price_observations;
ALTER TABLE price_observations_006 RENAME TO price_observations;
