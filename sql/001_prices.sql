-- Price ingestion tables. Applied once by pipeline/db.py, recorded in schema_version.

CREATE TABLE IF NOT EXISTS fetch_log (
    source            VARCHAR NOT NULL,
    provider          VARCHAR NOT NULL,
    started_at        TIMESTAMPTZ NOT NULL,
    finished_at       TIMESTAMPTZ NOT NULL,
    outcome           VARCHAR NOT NULL,   -- ok, partial, empty, unchanged, http_error, timeout, ...
    http_status       INTEGER,
    message           VARCHAR,
    offers            INTEGER NOT NULL DEFAULT 0,
    rejected          INTEGER NOT NULL DEFAULT 0,
    rejected_reasons  VARCHAR[],
    unmapped          VARCHAR[],
    bytes             BIGINT,
    sha256            VARCHAR,
    raw_path          VARCHAR,
    loaded_at         TIMESTAMPTZ,        -- when its observations were loaded (NULL: not yet, or re-parse requested)
    PRIMARY KEY (source, started_at)
);

-- Append-only: one row per offer per observation hour (a re-run of the same hour adds nothing).
CREATE TABLE IF NOT EXISTS price_observations (
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
    PRIMARY KEY (offer_key, observed_hour)
);

-- Latest observation per offer, rebuilt after every load.
CREATE TABLE IF NOT EXISTS offers_current (
    offer_key               VARCHAR PRIMARY KEY,
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
    fx_date                 VARCHAR,
    allocation              VARCHAR NOT NULL,
    availability            VARCHAR,
    first_seen              TIMESTAMPTZ NOT NULL,
    last_seen               TIMESTAMPTZ NOT NULL,
    verified_at             TIMESTAMPTZ NOT NULL,  -- the last time the price was actually seen at the source
    removed                 BOOLEAN NOT NULL,      -- absent from its source's latest successful fetch
    stale                   BOOLEAN NOT NULL,      -- verified more than 2 hours before the as-of time
    previous_price_usd      DOUBLE,
    jump_unconfirmed        BOOLEAN NOT NULL       -- >5x change not yet confirmed by a second observation
);

CREATE TABLE IF NOT EXISTS price_changes (
    offer_key       VARCHAR NOT NULL,
    old_price_usd   DOUBLE NOT NULL,
    new_price_usd   DOUBLE NOT NULL,
    changed_at      TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (offer_key, changed_at)
);
