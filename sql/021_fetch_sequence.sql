-- The order in which fetches happened, independent of the clock. fetch_seq is the fetch's line number in
-- raw/fetch_log.jsonl (append-only: a later fetch always has a larger number, whatever the machine's clock said).
-- Recorded for audits (which fetch came after which when a clock was wrong); current prices are still ordered by
-- observed_at, because a replay backfill legitimately loads older captures after newer ones (a fetch sequence
-- order would make a backfilled old price current). A live run whose clock is behind the log is refused instead
-- (pipeline/sources/landing.py::check_clock). Rows loaded before this migration get their number on the next load.
ALTER TABLE fetch_log ADD COLUMN fetch_seq BIGINT;
