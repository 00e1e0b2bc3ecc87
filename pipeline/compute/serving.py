"""A setup serves its load as the engine would run it (issue #23 over #22's engine model): the planner's fewest GPUs
moved up, in the engine's default layout, while the engine's own KV pool (its working memory, block rounding,
paging) holds fewer than the load's requests of its context -- ``sizing_core.deployment.fewest``'s rule, on an
instance shape. Without it a row of ``cheapest --concurrency 8`` could say the plan holds 7."""

from __future__ import annotations

from sizing_core import Architecture
from sizing_core.deployment import default_layout, engine_startup, serves
from sizing_core.engine_memory import EngineStartup
from sizing_core.engines import Engine
from sizing_core.gpus import GPU
from sizing_core.placement import MAX_GPUS, PlanSearch

Layout = tuple[int, int, int]  # GPUs, TP, PP


class Serving:
    """The rule for one model, format and load; start-up figures memoised per (GPU, engine, TP, PP)."""

    def __init__(self, arch: Architecture, fmt: str, context: int, concurrency: int, kv_cache_dtype: str):
        self.arch, self.fmt, self.context, self.concurrency, self.kv = arch, fmt, context, concurrency, kv_cache_dtype
        self._starts: dict[tuple[str, str, int, int], EngineStartup] = {}
        self._moved: dict[tuple[str, int, str, Layout], Layout] = {}

    def _start(self, gpu: GPU, engine: Engine, tp: int, pp: int) -> EngineStartup:
        key = (gpu.id, engine.id, tp, pp)
        if key not in self._starts:
            self._starts[key] = engine_startup(self.arch, gpu, engine, self.fmt, tp, pp, self.context, self.kv,
                                               self.concurrency)
        return self._starts[key]

    def layout(self, search: PlanSearch, gpu: GPU, engine: Engine, found: Layout) -> Layout:
        """``found`` (the planner's fewest on ``gpu``, shaped to its instance size) when the engine serves the
        load on it, else the next GPU count whose default layout fits and serves it; ``found`` when none up to
        ``MAX_GPUS`` does (as ``fit`` answers)."""
        key = (gpu.id, gpu.node_size, engine.id, found)
        if key not in self._moved:
            self._moved[key] = self._layout(search, gpu, engine, found)
        return self._moved[key]

    def _layout(self, search: PlanSearch, gpu: GPU, engine: Engine, found: Layout) -> Layout:
        n, tp, pp = found
        if serves(self._start(gpu, engine, tp, pp), self.concurrency):
            return found
        while n < MAX_GPUS:
            n += 1
            tp, pp = default_layout(self.arch, gpu, engine, n)
            if pp > self.arch.num_layers or not search.fits(gpu, engine, tp, pp):
                continue
            if serves(self._start(gpu, engine, tp, pp), self.concurrency):
                return n, tp, pp
        return found
