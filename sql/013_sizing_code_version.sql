-- The sizing code a grid row was computed with (pipeline.compute.grid.grid_version: a hash of sizing_core, the
-- planner and the grid module). out__sizing skipped a model when its Hub revision and the GPU rows were unchanged,
-- so a fix to the sizing rules (e.g. gpt-oss GGUF mixes keeping MXFP4 experts) never reached an existing
-- database: its rows stayed as the old code computed them while the exports, keyed by code version, moved on.
-- Rows written before this migration carry '' and are re-sized by the next run.
ALTER TABLE sizing ADD COLUMN sizing_version VARCHAR DEFAULT '';
