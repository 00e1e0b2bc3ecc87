-- Safetensors shard headers per Hub revision: read by HTTP range requests, never the weights.
-- One row per shard, and one summary per revision comparing the headers with config arithmetic.

CREATE TABLE IF NOT EXISTS checkpoint_shards (
    repo           VARCHAR NOT NULL,
    sha            VARCHAR NOT NULL,
    file           VARCHAR NOT NULL,
    header_length  BIGINT NOT NULL,   -- N, the JSON header's bytes (after the 8-byte length)
    data_bytes     BIGINT NOT NULL,   -- tensor data after the header
    file_bytes     BIGINT NOT NULL,   -- 8 + N + data_bytes: the shard's size
    tensors        INTEGER NOT NULL,
    fetched_at     TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (repo, sha, file)
);

CREATE TABLE IF NOT EXISTS checkpoint_summaries (
    repo                 VARCHAR NOT NULL,
    sha                  VARCHAR NOT NULL,
    files                INTEGER,
    tensors              INTEGER,
    file_bytes           BIGINT,      -- exact checkpoint size: the native weights' fact
    parameters           BIGINT,      -- served parameters from the headers (packed values unpacked; scales,
                                      -- MTP layers and stored copies of tied embeddings left out)
    stored_elements      BIGINT,      -- numel as stored (what the Hub API's safetensors.total counts)
    mtp_parameters       BIGINT,
    vision_parameters    BIGINT,
    bytes_by_dtype       JSON,
    config_parameters    BIGINT,      -- config arithmetic (sizing_core), NULL when the config does not parse
    difference_pct       DOUBLE,      -- (config - headers) / headers x 100
    used                 VARCHAR,     -- 'config' or 'safetensors': which count sizing reports
    used_reason          VARCHAR,
    error                VARCHAR,     -- why the headers could not be read (then the other columns are NULL)
    fetched_at           TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (repo, sha)
);
