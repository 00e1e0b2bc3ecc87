-- Step inputs: per output table a step computes whole, a digest of everything its rows were computed from, and
-- what the run that computed them reported (pipeline/compute/setups_table.py::refresh_cheapest_setups). A run whose
-- inputs have the recorded digest keeps the table instead of computing it again; whatever replaces or empties the
-- table drops its record in the same transaction. Derived data: safe to empty at any time (the next run computes
-- the table and records it again).
CREATE TABLE IF NOT EXISTS step_inputs (
    output        VARCHAR PRIMARY KEY,       -- the table the digest describes
    inputs_digest VARCHAR NOT NULL,
    summary       VARCHAR NOT NULL,          -- JSON: what the run that computed the rows reported
    recorded_at   TIMESTAMP WITH TIME ZONE NOT NULL
);
