-- Models, their Hub revisions, and the GPU catalog.

CREATE TABLE IF NOT EXISTS models (
    id             VARCHAR PRIMARY KEY,
    repo           VARCHAR NOT NULL,
    name           VARCHAR NOT NULL,
    lab            VARCHAR,
    country        VARCHAR,
    released       VARCHAR,
    base_model     VARCHAR,
    spec           VARCHAR,
    current_sha    VARCHAR,
    last_outcome   VARCHAR,
    pipeline_tag   VARCHAR,
    license        VARCHAR,
    gguf_files     JSON,
    derived        JSON,
    updated_at     TIMESTAMPTZ NOT NULL
);

CREATE TABLE IF NOT EXISTS model_revisions (
    repo               VARCHAR NOT NULL,
    sha                VARCHAR NOT NULL,
    last_modified      VARCHAR,
    fetched_at         TIMESTAMPTZ NOT NULL,
    config             JSON NOT NULL,
    hf_quant_config    JSON,
    safetensors_total  BIGINT,
    checkpoint_bytes   BIGINT,
    PRIMARY KEY (repo, sha)
);

CREATE TABLE IF NOT EXISTS gpus (
    id                  VARCHAR PRIMARY KEY,
    name                VARCHAR NOT NULL,
    vendor              VARCHAR NOT NULL,
    kind                VARCHAR NOT NULL,
    memory_gb           DOUBLE NOT NULL,
    memory_gib_usable   DOUBLE NOT NULL,   -- what sizing uses: driver-visible or the GPU's unified share
    memory_source       VARCHAR NOT NULL,
    bandwidth_gbs       DOUBLE,
    fp16_tflops_dense   DOUBLE,
    fp8_tflops_dense    DOUBLE,
    fp4_tflops_dense    DOUBLE,
    supports_fp8        BOOLEAN,
    supports_nvfp4      BOOLEAN,
    supports_mxfp4      BOOLEAN,
    gpus_per_node       INTEGER NOT NULL,
    tdp_w               DOUBLE,
    launch_msrp_usd     DOUBLE,
    row_hash            VARCHAR NOT NULL   -- changes when the catalog row changes (drives recomputation)
);
