"""One deployment as an engine would run it: the plan for exactly N GPUs (the engine's default layout) or the
fewest, the engine's start-up figures (``engines.memory``), and its speed with error bands (``engines.speed``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..architecture import Architecture
from ..batch import SCALAR, Ops
from ..engines import Engine, Support, effective_format
from ..engines.memory import EngineStartup
from ..gpus import GPU
from ..memo import model_memo
from ..record import Record, record
from .limits import Binding, binding
from .search import (
    MAX_GPUS,
    Placement,
    PlanSearch,
    check_load,
    fewest_gpus,
    stage_weights,
    valid_tensor_parallel,
)

#: the TP sizes an engine's default layout tries (largest first)
TP_SIZES = (1, 2, 4, 8, 16, 32, 64)


def default_tp(gpus: Any, node: Any, valid: Callable[[int], Any], tensor_parallel: Any = True,
               ops: Ops = SCALAR) -> Any:
    """The TP size of the engine's default layout on ``gpus`` GPUs of machines of ``node``: the largest TP of
    :data:`TP_SIZES` that fits one machine and ``gpus``, divides ``gpus`` and splits the model (``valid(tp)``);
    1 for an engine that splits layers. Numbers or columns (``sizing_core.batch``): the grid's plan for its count."""
    tp = 1
    for t in TP_SIZES[1:]:
        tp = ops.where((gpus >= t) & (node >= t) & (gpus % t == 0) & valid(t), t, tp)
    return ops.where(tensor_parallel, tp, 1)


def default_layout(arch: Architecture, gpu: GPU, engine: Engine, gpus: int) -> tuple[int, int]:
    """(TP, PP) an engine uses on exactly ``gpus`` GPUs: vLLM/SGLang the largest TP that divides the heads and
    ``gpus`` inside one machine, pipeline stages for the rest (across machines: TP = a whole machine); llama.cpp
    and MLX one layer range per device (:func:`default_tp`)."""
    if not engine.tensor_parallel:
        return 1, gpus
    key = (id(arch), gpu.node_size, gpus)  # memoised: the serving rule asks it for every count up to MAX_GPUS
    hit = _LAYOUTS.get(key)
    if hit is None or hit[0] is not arch:
        if len(_LAYOUTS) > 16384:
            _LAYOUTS.clear()
        tp = default_tp(gpus, gpu.node_size, lambda t: valid_tensor_parallel(arch, t))
        hit = _LAYOUTS[key] = (arch, (tp, gpus // tp))
    return hit[1]


_LAYOUTS: dict[tuple[int, int, int], tuple[Architecture, tuple[int, int]]] = model_memo()


def engine_startup(arch: Architecture, gpu: GPU, engine: Engine, fmt: str, tp: int, pp: int, context: int,
                   kv_cache_dtype: str = "bf16", concurrency: int = 1) -> EngineStartup:
    """What ``engine`` logs at start-up for ``arch`` in ``fmt`` on TP x PP GPUs with ``max_model_len = context``
    (llama.cpp: ``concurrency`` slots of ``context`` tokens)."""
    stored = effective_format(arch, fmt)
    stages = [(layers, w + engine.repack_extra_bytes(arch, stored, gpu, tp, layers))
              for layers, w in stage_weights(arch, fmt, tp, pp)]
    return engine.startup(arch, gpu, stages, tp, context, kv_cache_dtype, concurrency)


_STARTUP_CACHE: dict[tuple, tuple[Architecture, EngineStartup]] = model_memo()


def startup_for_plan(arch: Architecture, gpu: GPU, engine: Engine, placement: Placement) -> EngineStartup:
    """:func:`engine_startup` of a placement's plan with ``max_model_len`` = its context, memoised per (model
    object, GPU row, engine settings, format, layout, context, KV dtype, concurrency): setups ask it for the same
    plan on every instance shape."""
    plan = placement.plan
    assert plan is not None
    return startup_for_layout(arch, gpu, engine, placement.format, plan.tensor_parallel, plan.pipeline_parallel,
                              placement.context, placement.kv_cache_dtype, placement.concurrency)


def startup_for_layout(arch: Architecture, gpu: GPU, engine: Engine, fmt: str, tp: int, pp: int, context: int,
                       kv_cache_dtype: str, concurrency: int) -> EngineStartup:
    """:func:`startup_for_plan` from the layout alone (the same memo)."""
    key = (id(arch), gpu, engine, fmt, tp, pp, context, kv_cache_dtype, concurrency)
    hit = _STARTUP_CACHE.get(key)
    if hit is None or hit[0] is not arch:
        if len(_STARTUP_CACHE) > 8192:
            _STARTUP_CACHE.clear()
        hit = _STARTUP_CACHE[key] = (arch, engine_startup(arch, gpu, engine, fmt, tp, pp, context, kv_cache_dtype,
                                                          concurrency))
    return hit[1]


def served_concurrency(start: EngineStartup, engine: Engine, gpu: GPU) -> int:
    """Requests of ``max_model_len`` tokens the engine runs at once: what the KV pool holds, at most its
    ``max_num_seqs`` (vLLM's default by GPU; SGLang and llama.cpp: the pool decides)."""
    held = int(start.max_concurrency) if start.max_concurrency < 1e8 else 1
    cap = engine.running_cap(start)
    return max(0, min(held, cap) if cap else held)


def _common(arch: Architecture, gpu: GPU, engine: Engine, fmt: str, context: int, concurrency: int, kv: str,
            support: Support) -> dict:
    stored = effective_format(arch, fmt) if fmt == "native" else fmt
    return dict(gpu=gpu.id, engine=engine.id, format=fmt, weight_format=stored, context=context,
                concurrency=concurrency, kv_cache_dtype=kv, native_support=support.native, support_note=support.note)


def serves(start: EngineStartup, concurrency: int) -> bool:
    """The engine starts and its pool holds ``concurrency`` requests of ``max_model_len`` tokens."""
    return start.starts and start.max_concurrency >= concurrency


def exact(arch: Architecture, gpu: GPU, engine: Engine, fmt: str, gpus: int, context: int = 8192,
          concurrency: int = 1, kv_cache_dtype: str = "bf16") -> tuple[Placement, EngineStartup | None]:
    """Exactly ``gpus`` GPUs in the engine's default layout (:func:`default_layout`), fitting or not: the plan's
    memory per stage (built even when it does not fit), the engine's start-up figures, and ``fits`` when the
    planner's budget holds the load and the engine's pool serves ``concurrency`` requests of ``context``."""
    check_load(arch, context, concurrency, kv_cache_dtype)
    support = engine.supports(gpu, fmt, arch)
    common = _common(arch, gpu, engine, fmt, context, concurrency, kv_cache_dtype, support)
    if not support.runs:
        return Placement(fits=False, gpus=gpus, plan=None, reason=support.note, **common), None
    tp, pp = default_layout(arch, gpu, engine, gpus)
    if pp > arch.num_layers:
        return Placement(fits=False, gpus=gpus, plan=None, reason=f"{gpus} GPUs are more pipeline stages than the "
                         f"model's {arch.num_layers} layers", **common), None
    search = PlanSearch(arch, fmt, context, concurrency, kv_cache_dtype)
    plan = search.plan(gpu, engine, tp, pp, force=True)
    start = engine_startup(arch, gpu, engine, fmt, tp, pp, context, kv_cache_dtype, concurrency)
    fits = search.fits(gpu, engine, tp, pp) and serves(start, concurrency)
    reason = None
    if not fits:
        short = binding(plan, start, engine.name, concurrency, context) if plan is not None else None
        reason = (f"{engine.name} would not start: {short.note}" if short is not None and not start.starts
                  else short.note if short is not None else
                  f"weights, KV cache and working memory exceed {engine.name}'s budget on {gpus} GPU(s)")
    return Placement(fits=fits, gpus=gpus, plan=plan, reason=reason, **common), start


def shortfall(arch: Architecture, gpu: GPU, engine: Engine, fmt: str, gpus: int, context: int = 8192,
              concurrency: int = 1, kv_cache_dtype: str = "bf16") -> Binding | None:
    """Why exactly ``gpus`` GPUs (the engine's default layout) do not hold the load: the binding term of
    :func:`exact`'s plan (``limits.binding``), None when they do or when there is no such plan."""
    placed, start = exact(arch, gpu, engine, fmt, gpus, context, concurrency, kv_cache_dtype)
    if placed.fits or placed.plan is None:
        return None
    return binding(placed.plan, start, engine.name, concurrency, context)


@record
class Remedy(Record):
    """One setting that makes ``gpus`` GPUs hold the load: ``setting`` is ``memory_fraction``, ``kv_cache_dtype``
    or ``format``, ``value`` its new value, ``was`` the one asked (or the engine's default)."""

    setting: str
    value: str
    was: str
    gpus: int


def remedy(arch: Architecture, gpu: GPU, engine: Engine, fmt: str, gpus: int, context: int, concurrency: int,
           kv_cache_dtype: str, kind: str, formats: tuple[str, ...] = ()) -> Remedy | None:
    """The one setting that makes exactly ``gpus`` GPUs hold the load, for the binding ``kind``
    (``limits.KINDS``), tried in this order and checked by :func:`exact`: the KV cache binding, the engine's
    compact KV type; the cache, the activation peak or the reserve binding, the engine's highest memory fraction;
    any kind, the most faithful of ``formats`` (most faithful first) whose weights are smaller than ``fmt``'s.
    None: no single setting does."""
    def holds(e: Engine, f: str, kv: str) -> bool:
        return exact(arch, gpu, e, f, gpus, context, concurrency, kv)[0].fits

    compact = engine.compact_kv_dtype
    if kind == "kv_cache" and compact and kv_cache_dtype in ("bf16", "fp16") and holds(engine, fmt, compact):
        return Remedy(setting="kv_cache_dtype", value=compact, was=kv_cache_dtype, gpus=gpus)
    highest = engine.highest_memory_fraction
    start = exact(arch, gpu, engine, fmt, gpus, context, concurrency, kv_cache_dtype)[1]
    current = start.gpu_memory_utilization if start is not None else 1.0
    if kind != "weights" and highest is not None and current < highest and \
            holds(engine.with_settings(memory_fraction=highest), fmt, kv_cache_dtype):
        return Remedy(setting="memory_fraction", value=f"{highest:.2f}", was=f"{current:.2f}", gpus=gpus)
    weight = _weight_bytes(arch, fmt)
    for f in formats:
        if f != fmt and _weight_bytes(arch, f) < weight and engine.supports(gpu, f, arch).runs \
                and holds(engine, f, kv_cache_dtype):
            return Remedy(setting="format", value=f, was=fmt, gpus=gpus)
    return None


def _weight_bytes(arch: Architecture, fmt: str) -> float:
    return sum(w for _, w in stage_weights(arch, fmt, 1, 1))


Layout = tuple[int, int, int]  # GPUs, TP, PP
StartFor = Callable[[int, int], EngineStartup]  # (TP, PP) -> the engine's start-up figures for the search's load


def _start_for(search: PlanSearch, gpu: GPU, engine: Engine) -> StartFor:
    return lambda tp, pp: startup_for_layout(search.arch, gpu, engine, search.fmt, tp, pp, search.context, search.kv,
                                             search.concurrency)


def serving_layout(search: PlanSearch, gpu: GPU, engine: Engine, found: Layout,
                   start: StartFor | None = None) -> tuple[Layout, EngineStartup]:
    """Serve the search's load on ``gpu`` (its ``node_size`` the machine or instance shape): ``found`` (the
    planner's fewest) when the engine's own paging of the pool (block rounding, sliding windows kept for
    max_num_batched_tokens, state pages) serves the requests on it, else the next GPU count whose default layout
    (:func:`default_layout`) fits the planner's budget and serves them; ``found`` when none up to ``MAX_GPUS``
    does. Returns the layout and its start-up figures. ``start`` answers start-up figures per (TP, PP) (a caller's
    memo; default :func:`startup_for_layout`). The one rule :func:`fewest`, the cheapest-setup planner and its
    cache share."""
    start = start or _start_for(search, gpu, engine)
    arch, concurrency = search.arch, search.concurrency
    n, tp, pp = found
    first = start(tp, pp)
    if serves(first, concurrency):
        return found, first
    while n < MAX_GPUS:
        n += 1
        tp, pp = default_layout(arch, gpu, engine, n)
        if pp > arch.num_layers or not search.fits(gpu, engine, tp, pp):
            continue
        candidate = start(tp, pp)
        if serves(candidate, concurrency):
            return (n, tp, pp), candidate
    return found, first


def fewest_serving(search: PlanSearch, gpu: GPU, engine: Engine, start: StartFor | None = None,
                   serve: Callable[[Layout], Layout] | None = None) -> tuple[Support, Layout | None]:
    """:func:`fewest`'s answer without building the plan: the engine's support verdict and the layout that serves
    the search's load on ``gpu`` (None: the engine cannot run the format, or no plan within ``MAX_GPUS``). The same
    errors as :func:`fewest`, in its order. ``serve``: :func:`serving_layout` of a found layout through a caller's
    memo (default: computed here with ``start``)."""
    arch = search.arch
    check_load(arch, search.context, search.concurrency, search.kv)
    support = engine.supports(gpu, search.fmt, arch)
    if not support.runs:
        return support, None
    found = search.fewest(gpu, engine)
    if found is None:
        return support, None
    return support, serve(found) if serve is not None else serving_layout(search, gpu, engine, found, start)[0]


def fewest(arch: Architecture, gpu: GPU, engine: Engine, fmt: str, context: int = 8192, concurrency: int = 1,
           kv_cache_dtype: str = "bf16") -> tuple[Placement, EngineStartup | None]:
    """The planner's fewest GPUs (``placement.fewest_gpus``), moved up while the engine cannot serve the requests
    (:func:`serving_layout`)."""
    placed = fewest_gpus(arch, gpu, engine, fmt, context, concurrency, kv_cache_dtype)
    if placed.plan is None:
        return placed, None
    plan = placed.plan
    search = PlanSearch(arch, fmt, context, concurrency, kv_cache_dtype)
    found = (plan.gpus, plan.tensor_parallel, plan.pipeline_parallel)
    layout, start = serving_layout(search, gpu, engine, found)
    if layout == found:
        return placed, start
    n, tp, pp = layout
    return placed.model_copy(update={"gpus": n, "plan": search.plan(gpu, engine, tp, pp)}), start
