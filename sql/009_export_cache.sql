-- Export cache: the price-independent part of each published model file (sizing report figures,
-- gpusNeeded, throughput, fine-tuning, the exact planner's cells), kept across runs so a run in which only prices
-- moved re-assembles the model files instead of re-sizing every model. Derived data: safe to empty at any time.
-- pipeline/exports/static_cache.py reads and rewrites it; a row is used only while its key (a hash of the model's
-- watchlist entry, revision, Hub facts, the GPU catalog and the sizing/export code) is unchanged.
CREATE TABLE IF NOT EXISTS export_cache (
    model_id    VARCHAR NOT NULL PRIMARY KEY,
    cache_key   VARCHAR NOT NULL,
    payload     VARCHAR NOT NULL,   -- JSON: pipeline.exports.model_json.static_export
    computed_at TIMESTAMPTZ NOT NULL
);
