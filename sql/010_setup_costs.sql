-- Cost per setup: decode speed of the plan and $/1M output tokens, single stream and at the
-- concurrency the plan allows (sizing_core.throughput + sizing_core.cost). NULL when the GPU has no bandwidth figure.
ALTER TABLE cheapest_setups ADD COLUMN IF NOT EXISTS decode_tokens_per_s DOUBLE;
ALTER TABLE cheapest_setups ADD COLUMN IF NOT EXISTS max_concurrent_requests INTEGER;
ALTER TABLE cheapest_setups ADD COLUMN IF NOT EXISTS aggregate_tokens_per_s DOUBLE;
ALTER TABLE cheapest_setups ADD COLUMN IF NOT EXISTS usd_per_million_tokens DOUBLE;
ALTER TABLE cheapest_setups ADD COLUMN IF NOT EXISTS usd_per_million_tokens_batched DOUBLE;
