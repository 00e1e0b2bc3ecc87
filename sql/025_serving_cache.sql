-- Serving cache: what a setup's layout does at a load (pipeline/compute/serving_cache.py), kept across runs. The
-- cheapest setups meeting the default interactive floor are found by serving candidates in price order; which
-- candidates are served depends on prices, but what one layout does at a load does not, so an hourly run in which
-- only offers moved serves only layouts it has not met before. Derived data: safe to empty at any time (the next
-- run recomputes it); rows of another model revision, GPU catalog row or sizing code are dropped.
CREATE TABLE IF NOT EXISTS serving_cache (
    model_id          VARCHAR NOT NULL,
    revision          VARCHAR NOT NULL,   -- Hub sha, or "spec:<hash>" (as in sizing)
    context           INTEGER NOT NULL,   -- the load: `concurrency` requests of the standard workload at `context`
    concurrency       INTEGER NOT NULL,
    kv_cache_dtype    VARCHAR NOT NULL,
    gpu_id            VARCHAR NOT NULL,
    gpu_row_hash      VARCHAR NOT NULL,   -- as gpus.row_hash: a changed catalog row invalidates its rows
    engine            VARCHAR NOT NULL,
    format            VARCHAR NOT NULL,
    tensor_parallel   INTEGER NOT NULL,
    pipeline_parallel INTEGER NOT NULL,
    nodes             INTEGER NOT NULL,
    native_support    BOOLEAN NOT NULL,
    sizing_version    VARCHAR NOT NULL,   -- serving_cache.serving_version: the sizing code and the screen
    served            BOOLEAN NOT NULL,   -- the steady state was computed (serving below, NULL: no request fits)
    serving           VARCHAR,            -- the steady state's fields as a JSON array, in their declared order
    bound_shortfall   VARCHAR[]           -- what two lower bounds say the layout surely misses of the default
                                          -- floor; NULL: not computed
);
