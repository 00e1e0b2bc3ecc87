-- Sizing grid and cheapest setups (what the exports publish).

CREATE TABLE IF NOT EXISTS sizing (
    model_id             VARCHAR NOT NULL,
    revision             VARCHAR NOT NULL,   -- Hub sha, or "spec:<hash>" for manual specs
    format               VARCHAR NOT NULL,
    stored_format        VARCHAR NOT NULL,
    context              INTEGER NOT NULL,
    gpu_id               VARCHAR NOT NULL,
    gpu_kind             VARCHAR NOT NULL,
    engine               VARCHAR NOT NULL,
    runs                 BOOLEAN NOT NULL,
    native_support       BOOLEAN NOT NULL,
    above_max_context    BOOLEAN NOT NULL,
    weights_gib          DOUBLE NOT NULL,
    kv_gib               DOUBLE NOT NULL,
    state_gib            DOUBLE NOT NULL,
    single_gpu_gib       DOUBLE NOT NULL,
    usable_gib           DOUBLE NOT NULL,
    fits_single          BOOLEAN NOT NULL,
    est_gpus             INTEGER,
    decode_tokens_per_s  DOUBLE,
    gpu_row_hash         VARCHAR NOT NULL,
    PRIMARY KEY (model_id, format, context, gpu_id, engine)
);

CREATE TABLE IF NOT EXISTS cheapest_setups (
    model_id             VARCHAR NOT NULL,
    list                 VARCHAR NOT NULL,   -- on_demand | spot (spot, marketplace and bid statistics)
    rank                 INTEGER NOT NULL,
    format               VARCHAR NOT NULL,
    provider             VARCHAR NOT NULL,
    source               VARCHAR NOT NULL,
    instance_type        VARCHAR NOT NULL,
    region               VARCHAR,
    gpu_id               VARCHAR NOT NULL,
    instances            INTEGER NOT NULL,
    gpus_per_instance    INTEGER NOT NULL,
    gpus                 INTEGER NOT NULL,
    gpus_needed          INTEGER NOT NULL,
    tensor_parallel      INTEGER NOT NULL,
    pipeline_parallel    INTEGER NOT NULL,
    price_per_hour       DOUBLE NOT NULL,
    price_per_month      DOUBLE NOT NULL,
    price_per_gpu_hour   DOUBLE NOT NULL,
    currency_listed      VARCHAR NOT NULL,
    fx_date              VARCHAR,
    allocation           VARCHAR NOT NULL,
    engine               VARCHAR NOT NULL,
    verified_at          TIMESTAMPTZ NOT NULL,
    computed_at          TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (model_id, list, format, rank)
);
