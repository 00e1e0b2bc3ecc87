-- Placement cache: what the cheapest-setups planner learnt about one model on one GPU kind, kept across
-- runs so an hourly run in which only prices moved does not re-plan. Derived data: safe to empty at any time (the
-- next run recomputes it); pipeline/compute/placement_cache.py reads and rewrites it, keeping only rows whose model
-- revision, GPU catalog row hash and sizing code version are still current.
CREATE TABLE IF NOT EXISTS placement_cache (
    model_id                VARCHAR NOT NULL,
    revision                VARCHAR NOT NULL,   -- Hub sha, or "spec:<hash>" (as in sizing)
    format                  VARCHAR NOT NULL,
    context                 INTEGER NOT NULL,
    concurrency             INTEGER NOT NULL,
    kv_cache_dtype          VARCHAR NOT NULL,
    gpu_id                  VARCHAR NOT NULL,
    gpu_row_hash            VARCHAR NOT NULL,   -- as gpus.row_hash: a changed catalog row invalidates its rows
    gpus_per_instance       INTEGER NOT NULL,   -- the instance shape; 0 = the row holds only gpus_floor
    sizing_version          VARCHAR NOT NULL,   -- hash of the sizing code: a code change invalidates every row
    gpus_floor              INTEGER,            -- fewest GPUs that can hold the weights (pruning bound)
    gpus                    INTEGER,            -- fewest GPUs of the placement; NULL = no deployment
    tensor_parallel         INTEGER,
    pipeline_parallel       INTEGER,
    native_support          BOOLEAN,
    support_note            VARCHAR,
    rates_known             BOOLEAN NOT NULL DEFAULT false,  -- the decode rates below were computed
    decode_tokens_per_s     DOUBLE,             -- one request (unrounded)
    max_concurrent_requests INTEGER,            -- the batch the aggregate rate is for
    aggregate_tokens_per_s  DOUBLE
);
