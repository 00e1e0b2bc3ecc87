"""What a plan is: per-stage memory, the plan, the placement answer. Records only, importing nothing that runs, so
the engines (which the placement search imports) can name them."""

from __future__ import annotations

from .errors import SizingError
from .record import CamelRecord, record


class ContextTooLongError(SizingError):
    pass


@record
class StageMemory(CamelRecord):
    """One pipeline stage on one of its GPUs (GiB)."""

    stage: int
    layers: tuple[int, int]  # first and last decoder layer, inclusive
    weights: float
    kv_cache: float
    recurrent_state: float
    activations: float
    engine_overhead: float
    total: float


@record
class Plan(CamelRecord):
    gpus: int
    tensor_parallel: int
    pipeline_parallel: int
    nodes: int
    gpus_per_node: int
    layers_per_stage: tuple[int, ...]
    stages: tuple[StageMemory, ...]
    usable_gib: float  # per GPU, after the engine's share
    headroom_gib: float  # usable minus the largest stage

    @property
    def largest_stage(self) -> StageMemory:
        return max(self.stages, key=lambda s: s.total)


@record
class Placement(CamelRecord):
    gpu: str
    engine: str
    format: str  # as asked
    weight_format: str  # what is stored (native resolved)
    context: int
    concurrency: int
    kv_cache_dtype: str
    fits: bool
    gpus: int | None
    native_support: bool
    support_note: str
    plan: Plan | None
    reason: str | None = None
