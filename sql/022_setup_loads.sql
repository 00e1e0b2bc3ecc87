-- Answers at a load: cheapest setups are planned for `concurrency` requests of `context` tokens and
-- ranked by price or by cost per output token (`sort`); one row per provider x instance type x price, the regions
-- offering it listed together (`regions`). A model now has one ranked list per (list, context, concurrency, sort,
-- format), so the table is re-created with that key. Derived data: out__cheapest_setups rewrites it every run, so
-- nothing is copied. The placement cache keeps the aggregate decode rate at the planned load.
DROP TABLE IF EXISTS cheapest_setups;
CREATE TABLE cheapest_setups (
    model_id                        VARCHAR NOT NULL,
    list                            VARCHAR NOT NULL,   -- on_demand | spot (spot, marketplace and bid statistics)
    context                         INTEGER NOT NULL DEFAULT 8192,  -- tokens per request of the load
    concurrency                     INTEGER NOT NULL DEFAULT 1,     -- requests served at once
    sort                            VARCHAR NOT NULL DEFAULT 'price',  -- price | per_token
    rank                            INTEGER NOT NULL,
    format                          VARCHAR NOT NULL,
    provider                        VARCHAR NOT NULL,
    source                          VARCHAR NOT NULL,
    instance_type                   VARCHAR NOT NULL,
    region                          VARCHAR,
    regions                         VARCHAR[],          -- every region offering this setup at this price
    gpu_id                          VARCHAR NOT NULL,
    instances                       INTEGER NOT NULL,
    gpus_per_instance               INTEGER NOT NULL,
    gpus                            INTEGER NOT NULL,
    gpus_needed                     INTEGER NOT NULL,
    tensor_parallel                 INTEGER NOT NULL,
    pipeline_parallel               INTEGER NOT NULL,
    price_per_hour                  DOUBLE NOT NULL,
    price_per_month                 DOUBLE NOT NULL,
    price_per_gpu_hour              DOUBLE NOT NULL,
    currency_listed                 VARCHAR NOT NULL,
    fx_date                         VARCHAR,
    allocation                      VARCHAR NOT NULL,
    engine                          VARCHAR NOT NULL,
    verified_at                     TIMESTAMPTZ NOT NULL,
    computed_at                     TIMESTAMPTZ NOT NULL,
    nodes                           INTEGER,
    deployment                      VARCHAR,            -- single_machine | cluster | llama.cpp-rpc
    interconnect                    VARCHAR,            -- the cluster fabric (multi-node only)
    native_support                  BOOLEAN,
    support_note                    VARCHAR,
    flags                           VARCHAR[],
    fx_stale                        BOOLEAN,            -- converted with an ECB rate > 4 days old
    availability                    VARCHAR,            -- capacity as the offer's source states it (sql/020)
    decode_tokens_per_s             DOUBLE,
    max_concurrent_requests         INTEGER,
    aggregate_tokens_per_s          DOUBLE,
    usd_per_million_tokens          DOUBLE,
    usd_per_million_tokens_batched  DOUBLE,
    decode_tokens_per_s_low         DOUBLE,             -- the calibration band's range (sql/014)
    decode_tokens_per_s_high        DOUBLE,
    aggregate_tokens_per_s_low      DOUBLE,
    aggregate_tokens_per_s_high     DOUBLE,
    usd_per_million_tokens_batched_low  DOUBLE,
    usd_per_million_tokens_batched_high DOUBLE,
    tokens_per_s_per_request        DOUBLE,             -- each request while `concurrency` run together
    usd_per_million_tokens_at_load  DOUBLE,             -- cost per output token at the load
    PRIMARY KEY (model_id, list, context, concurrency, sort, format, rank)
);
ALTER TABLE placement_cache ADD COLUMN IF NOT EXISTS load_tokens_per_s DOUBLE;  -- aggregate at the planned load
