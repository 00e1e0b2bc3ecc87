-- The sizing grid without its PRIMARY KEY: the key's index cost about half of writing the grid (2.1 M
-- rows of 200 models x 60 GPUs: ~10 s with the index, ~5 s without, plus the index's checkpoint) and nothing reads
-- through it. Rows stay unique by construction: out__sizing deletes a model's (or a GPU's) rows and inserts the
-- grid's in the same transaction, and the grid holds one row per (model_id, format, context, gpu_id, engine)
-- (tests/test_incremental.py checks it after full and incremental runs). Same columns, types and NOT NULLs.
CREATE TABLE sizing_unkeyed (
    model_id             VARCHAR NOT NULL,
    revision             VARCHAR NOT NULL,   -- Hub sha, or "spec:<hash>" for manual specs
    format               VARCHAR NOT NULL,
    stored_format        VARCHAR NOT NULL,
    context              INTEGER NOT NULL,
    gpu_id               VARCHAR NOT NULL,
    gpu_kind             VARCHAR NOT NULL,
    engine               VARCHAR NOT NULL,
    runs                 BOOLEAN NOT NULL,
    native_support       BOOLEAN NOT NULL,
    above_max_context    BOOLEAN NOT NULL,
    weights_gib          DOUBLE NOT NULL,
    kv_gib               DOUBLE NOT NULL,
    state_gib            DOUBLE NOT NULL,
    single_gpu_gib       DOUBLE NOT NULL,
    usable_gib           DOUBLE NOT NULL,
    fits_single          BOOLEAN NOT NULL,
    est_gpus             INTEGER,
    decode_tokens_per_s  DOUBLE,
    gpu_row_hash         VARCHAR NOT NULL
);
INSERT INTO sizing_unkeyed SELECT * FROM sizing;
DROP TABLE sizing;
ALTER TABLE sizing_unkeyed RENAME TO sizing;
