"""The published shapes, described once: the per-model JSON (every key of seed 004 with its type and meaning, plus
our additions under new keys) and the snapshot manifest. JSON Schema files are generated from these models."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = "1"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Lab(_Strict):
    name: str
    country: str


class KVRow(_Strict):
    context: int
    bf16: float
    fp8: float


class PlanSummary(_Strict):
    tensorParallel: int
    pipelineParallel: int
    nodes: int
    engine: str
    format: str  # the weight format actually used for this column on this GPU
    nativeSupport: bool


class GpuNeeded(_Strict):
    gpu: str
    name: str
    memoryGB: int  # as seed 004: marketed GB, or the GPU's share of unified memory
    engine: str
    byFormat: dict[str, int | None]  # fewest GPUs per format column; null = no deployment
    plans: dict[str, PlanSummary | None] = Field(default_factory=dict)  # addition: the plan behind each cell


class GpusNeeded(_Strict):
    scenario: str
    gpus: list[GpuNeeded]


class ModelExport(BaseModel):
    """``models/<id>.json``. The first block is seed 004's contract; keep names and types, add new keys only."""

    model_config = ConfigDict(extra="forbid")

    id: str
    name: str
    repo: str
    lab: Lab
    released: str | None
    parameters: float  # billions
    activeParameters: float  # billions
    maxContext: int | None
    architecture: str
    page: str
    calculator: str
    weightsGiB: dict[str, float | None]  # native null when the checkpoint's scheme is unknown (#11)
    kvCacheGiBPerRequest: list[KVRow]
    recurrentStateGiBPerRequest: float
    gpusNeeded: GpusNeeded
    ggufFiles: dict[str, Any] | None
    runsWith: list[str]
    verified: str | None  # date the prices used were last seen at their source
    updated: str
    # additions
    cheapestSetups: list[dict[str, Any]] = Field(default_factory=list)
    spotSetups: list[dict[str, Any]] = Field(default_factory=list)
    throughput: dict[str, Any] = Field(default_factory=dict)
    fineTuning: dict[str, Any] = Field(default_factory=dict)
    launch: dict[str, Any] | None = None
    recommendations: dict[str, Any] = Field(default_factory=dict)
    derived: dict[str, Any] = Field(default_factory=dict)
    parameterCounts: dict[str, Any] = Field(default_factory=dict)
    provenance: dict[str, Any] = Field(default_factory=dict)


class SourceStatus(_Strict):
    verified_at: str | None  # last successful fetch: when its prices were last seen at the source
    last_outcome: str | None
    stale: bool


class Manifest(_Strict):
    snapshot_id: str
    generated_at: str
    schema_version: str
    mode: str  # replay | live
    as_of: str
    sources: dict[str, SourceStatus]
    row_counts: dict[str, int]
    files: dict[str, str]  # relative path -> sha256
