-- Issue #27: the order in which fetches happened, independent of the clock. fetch_seq is the fetch's line number in
-- raw/fetch_log.jsonl (append-only: a later fetch always has a larger number, whatever the machine's clock said).
-- offers_current takes each offer's latest observation by this order first, observed_at second, so a run whose
-- clock was behind (allowed with --allow-clock-behind) still replaces the prices it saw after.
-- Rows loaded before this migration get their number from the same file on the next core__fetch_log.
ALTER TABLE fetch_log ADD COLUMN fetch_seq BIGINT;
