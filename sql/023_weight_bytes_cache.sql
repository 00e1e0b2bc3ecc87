-- Weight bytes per model and format: what the cheapest-setups search bounds its pruning with (every
-- weight, and the weights one decode step reads: pipeline/compute/rates.py::weight_bytes). Computing them walks every
-- tensor of every format, ~40% of an hourly run's setups step in which only prices moved, so they are kept across runs
-- like the placement cache. Derived data: safe to empty at any time; rows of another revision or sizing code are
-- dropped and recomputed.
CREATE TABLE IF NOT EXISTS weight_bytes_cache (
    model_id        VARCHAR NOT NULL,
    revision        VARCHAR NOT NULL,   -- Hub sha, or "spec:<hash>" (as in sizing)
    format          VARCHAR NOT NULL,
    sizing_version  VARCHAR NOT NULL,   -- as placement_cache.sizing_version
    total_bytes     DOUBLE NOT NULL,    -- every weight in this format
    active_bytes    DOUBLE NOT NULL,    -- non-expert weights and the routed experts' top-k share, embeddings aside
    PRIMARY KEY (model_id, format)
);
