"""A setup serves its load as the engine would run it: ``sizing_core.placement.deployment.serving_layout`` (the planner's
fewest GPUs moved up, in the engine's default layout, while the engine's own KV pool holds fewer than the load's
requests of its context), with the engine's start-up figures memoised for one model, format and load. Without it
a row of ``cheapest --concurrency 8`` could say the plan holds 7."""

from __future__ import annotations

from sizing_core import Architecture
from sizing_core.engines import Engine
from sizing_core.engines.memory import EngineStartup
from sizing_core.gpus import GPU
from sizing_core.placement.deployment import Layout, engine_startup, serving_layout
from sizing_core.placement.search import PlanSearch


class Serving:
    """Start-up figures of one model, format and load, memoised per (GPU, engine, TP, PP) (not per instance
    shape: the figures do not depend on it), and the layouts found with them."""

    def __init__(self, arch: Architecture, fmt: str, context: int, concurrency: int, kv_cache_dtype: str):
        self.arch, self.fmt, self.context, self.concurrency, self.kv = arch, fmt, context, concurrency, kv_cache_dtype
        self._starts: dict[tuple[str, str, int, int], EngineStartup] = {}
        self._moved: dict[tuple[str, int, str, Layout], Layout] = {}

    def start(self, gpu: GPU, engine: Engine, tp: int, pp: int) -> EngineStartup:
        key = (gpu.id, engine.id, tp, pp)
        if key not in self._starts:
            self._starts[key] = engine_startup(self.arch, gpu, engine, self.fmt, tp, pp, self.context, self.kv,
                                               self.concurrency)
        return self._starts[key]

    def starts(self, gpu: GPU, engine: Engine):  # type: ignore[no-untyped-def]
        """:meth:`start` for one GPU and engine, as ``serving_layout`` asks it."""
        return lambda tp, pp: self.start(gpu, engine, tp, pp)

    def layout(self, search: PlanSearch, gpu: GPU, engine: Engine, found: Layout) -> Layout:
        """``serving_layout`` of ``found`` (the planner's fewest on ``gpu``, shaped to its instance size)."""
        key = (gpu.id, gpu.node_size, engine.id, found)
        if key not in self._moved:
            self._moved[key] = serving_layout(search, gpu, engine, found, self.starts(gpu, engine))[0]
        return self._moved[key]
