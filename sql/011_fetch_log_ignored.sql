-- Reliability: each fetch says how many rows of its payload were quietly ignored because they are
-- not GPU offers (CPU-only plans, storage, ...), counted by reason, as raw/fetch_log.jsonl already records.
-- NULL on rows loaded before this migration until core__fetch_log fills them from fetch_log.jsonl (it does on
-- its next run); 0 / an empty map means the parser ignored nothing.
ALTER TABLE fetch_log ADD COLUMN ignored INTEGER;
ALTER TABLE fetch_log ADD COLUMN ignored_reasons MAP(VARCHAR, INTEGER);
