-- Ranges of a setup's speed and cost: the calibration's measured / predicted band for the engine, GPU
-- class and model class (sizing_core.calibration.band) applied to the decode rates; $/1M tokens at the concurrency
-- the engine serves at the planned context. NULL when the GPU has no bandwidth figure.
ALTER TABLE cheapest_setups ADD COLUMN IF NOT EXISTS decode_tokens_per_s_low DOUBLE;
ALTER TABLE cheapest_setups ADD COLUMN IF NOT EXISTS decode_tokens_per_s_high DOUBLE;
ALTER TABLE cheapest_setups ADD COLUMN IF NOT EXISTS aggregate_tokens_per_s_low DOUBLE;
ALTER TABLE cheapest_setups ADD COLUMN IF NOT EXISTS aggregate_tokens_per_s_high DOUBLE;
ALTER TABLE cheapest_setups ADD COLUMN IF NOT EXISTS usd_per_million_tokens_batched_low DOUBLE;
ALTER TABLE cheapest_setups ADD COLUMN IF NOT EXISTS usd_per_million_tokens_batched_high DOUBLE;
