"""Fewest GPUs: the smallest deployment an engine could really run, with its parallelism plan.

Rules (``docs/placement.md``):
- vLLM/SGLang split attention heads with tensor parallelism inside one machine (TP must divide every
  attention kind's head count, and KV heads must divide TP or be divided by it) and split layers with pipeline
  parallelism; across machines TP takes the whole machine and PP = number of machines (vLLM's guidance).
- llama.cpp and MLX split layers over any number of devices, across machines through RPC.
- Layers are assigned to pipeline stages contiguously; stages may be uneven. The largest stage, not the
  average, decides whether a plan fits. The embedding sits on the first stage, the LM head on the last.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..architecture import Architecture
from ..engines import Engine, Support, effective_format
from ..errors import SizingError
from ..formats import tensor_bits
from ..gpus import GPU
from ..kv_cache import cache_bytes
from ..layers import (
    MLSTM,
    CompressedSparseAttention,
    CrossAttention,
    FullAttention,
    GatedDeltaNet,
    KimiDeltaAttention,
    LinearAttention,
    Mamba,
    Mamba2,
    MLAAttention,
    ParallelHybrid,
    RWKVTimeMix,
    SelfAndCrossAttention,
    ShortConv,
)
from ..memo import model_memo
from ..plan import ContextTooLongError, Placement, Plan, StageMemory
from ..units import GIB
from .fewest import fewest_layout, lower_bound
from .stages import stage_count, stage_loads

MAX_GPUS = 128


@dataclass(frozen=True)
class _Loads:
    """Bytes per decoder layer (weights) and outside the layers, for one format."""

    layer_weights: tuple[float, ...]
    first_extra: float  # embedding, vision tower
    last_extra: float  # final norm, LM head (or a tied copy of the embedding)
    tied_copy: float  # the embedding again, on the last stage, when tied and PP > 1


_LOADS_CACHE: dict[tuple[int, str], tuple[Architecture, _Loads]] = model_memo()


def _weight_loads(arch: Architecture, fmt: str) -> _Loads:
    """Per-layer weight bytes of ``arch`` in ``fmt``, cached: a grid asks for the same model and format on every
    GPU. Keyed by object identity, with the object kept so an id is never reused while cached."""
    key = (id(arch), fmt)
    hit = _LOADS_CACHE.get(key)
    if hit is not None and hit[0] is arch:
        return hit[1]
    if len(_LOADS_CACHE) > 4096:
        _LOADS_CACHE.clear()
    loads = _compute_weight_loads(arch, fmt)
    _LOADS_CACHE[key] = (arch, loads)
    return loads


def _compute_weight_loads(arch: Architecture, fmt: str) -> _Loads:
    return _loads_from_bits(arch, tensor_bits(arch, fmt))


def remember_weight_loads(arch: Architecture, fmt: str, bits: Sequence[float]) -> None:
    """Give the planner ``arch``'s bits per element in ``fmt``, one per tensor as ``formats.tensor_bits`` has them,
    computed by the caller (the sizing grid's columns, held equal to ``tensor_bits`` by ``tests/test_grid.py``):
    its weight loads are then summed from them instead of recomputed per tensor."""
    if len(_LOADS_CACHE) > 4096:
        _LOADS_CACHE.clear()
    _LOADS_CACHE[(id(arch), fmt)] = (arch, _loads_from_bits(arch, bits))


def _loads_from_bits(arch: Architecture, bits: Sequence[float]) -> _Loads:
    per_layer = [0.0] * arch.num_layers
    first = last = tied = 0.0
    for t, b in zip(arch.tensors, bits, strict=True):
        nbytes = t.numel * b / 8
        if t.layer is not None:
            per_layer[t.layer] += nbytes
        elif t.role in ("output",) or t.name == "model.norm":
            last += nbytes
        else:
            first += nbytes
            if t.role == "token_embd" and arch.tie_word_embeddings:
                tied = nbytes
    return _Loads(tuple(per_layer), first, last, tied)


_TP_CACHE: dict[tuple[int, int], tuple[Architecture, bool]] = model_memo()


def valid_tensor_parallel(arch: Architecture, tp: int) -> bool:
    """vLLM's rule: TP divides the attention heads of every layer kind; GQA KV heads divide TP or vice versa."""
    key = (id(arch), tp)
    hit = _TP_CACHE.get(key)
    if hit is None or hit[0] is not arch:
        if len(_TP_CACHE) > 4096:
            _TP_CACHE.clear()
        hit = _TP_CACHE[key] = (arch, _valid_tensor_parallel(arch, tp))
    return hit[1]


def _valid_tensor_parallel(arch: Architecture, tp: int) -> bool:
    return all(_mixer_splits(layer.mixer, tp) for layer in arch.layers if layer.mixer is not None)


def _mixer_splits(m: object, tp: int) -> bool:
    """Whether TP ranks can split this mixer evenly, as vLLM's layers shard it: attention heads (GQA KV heads divide
    TP or TP divides them: replicated), the heads of latent, sparse and linear/recurrent attention, Mamba's inner
    channels (``MambaMixer``'s column-parallel in_proj), a short convolution's channels; both halves of a parallel
    hybrid. A mixer kind not listed has no head count to split."""
    if isinstance(m, FullAttention | CrossAttention):
        return not (m.num_heads % tp or (m.num_kv_heads % tp and tp % m.num_kv_heads))
    if isinstance(m, ParallelHybrid):
        return _mixer_splits(m.attention, tp) and _mixer_splits(m.ssm, tp)
    if isinstance(m, SelfAndCrossAttention):
        return _mixer_splits(m.attention, tp) and _mixer_splits(m.cross, tp)
    if isinstance(m, GatedDeltaNet):
        return not (m.num_v_heads % tp or m.num_k_heads % tp)
    if isinstance(m, MLAAttention | CompressedSparseAttention | KimiDeltaAttention | Mamba2 | LinearAttention | MLSTM):
        return m.num_heads % tp == 0
    if isinstance(m, RWKVTimeMix):
        return m.heads % tp == 0
    if isinstance(m, Mamba):
        return m.intermediate % tp == 0
    if isinstance(m, ShortConv):
        return m.hidden % tp == 0
    return True


def _cache_per_layer(arch: Architecture, context: int, concurrency: int, kv_dtype: str, tp: int) -> tuple[list, list]:
    key = (id(arch), context, concurrency, kv_dtype, tp)
    hit = _CACHE_LAYERS.get(key)
    if hit is not None and hit[0] is arch:
        return hit[1]
    if len(_CACHE_LAYERS) > 4096:
        _CACHE_LAYERS.clear()
    result = _compute_cache_per_layer(arch, context, concurrency, kv_dtype, tp)
    _CACHE_LAYERS[key] = (arch, result)
    return result


_CACHE_LAYERS: dict[tuple, tuple[Architecture, tuple[list, list]]] = model_memo()


def _compute_cache_per_layer(arch: Architecture, context: int, concurrency: int, kv_dtype: str,
                             tp: int) -> tuple[list, list]:
    b = cache_bytes(kv_dtype)
    kv, state = [], []
    for layer in arch.layers:
        m = layer.mixer
        kv.append(0.0 if m is None else m.kv_bytes_per_request(context, b, tp) * concurrency)
        state.append(0.0 if m is None else m.state_bytes(tp) * concurrency)
    return kv, state


def _stage_bounds(loads: list[float], first: float, last: float, pp: int, cap: float) -> list[int] | None:
    """Greedy contiguous split of layers into at most ``pp`` stages of at most ``cap`` bytes each, by the loads
    :func:`stages.stage_count` counts. Returns stage sizes (layers per stage), or None when it cannot be done."""
    sizes, current, count = [], 0.0, 0
    for load in stage_loads(loads, first, last):
        if count and current + load > cap:
            sizes.append(count)
            current, count = 0.0, 0
        current += load
        count += 1
        if current > cap:
            return None
    sizes.append(count)
    if len(sizes) > pp:
        return None
    while len(sizes) < pp:  # split the largest stage further so every GPU holds at least one layer
        k = sizes.index(max(sizes))  # the first largest stage
        if sizes[k] < 2:
            return None
        sizes[k:k + 1] = [sizes[k] - sizes[k] // 2, sizes[k] // 2]
    return sizes


def _balanced(loads: list[float], first: float, last: float, pp: int) -> list[int] | None:
    """Stage sizes that minimise the largest stage (binary search on the cap over the greedy split)."""
    if pp > len(loads):
        return None
    lo = max(max(loads), first + loads[0], loads[-1] + last)
    hi = sum(loads) + first + last
    best = _stage_bounds(loads, first, last, pp, hi)
    for _ in range(60):
        mid = (lo + hi) / 2
        sizes = _stage_bounds(loads, first, last, pp, mid)
        if sizes is not None:
            best, hi = sizes, mid
        else:
            lo = mid
        if hi - lo < 2**20:  # 1 MiB: finer balance changes nothing a user sees
            break
    return best


_LAYER_BYTES: dict[tuple, tuple[Architecture, _Loads, list[float], dict[int, list[int] | None]]] = model_memo()
#: per-layer repacking bytes per (model object, GPU traits, engine, TP): the same for every format stored in MXFP4
#: and every load
_REPACKS: dict[tuple, tuple[Architecture, list[float]]] = model_memo()


def _per_gpu_layers(arch: Architecture, loads: _Loads, tp: int, context: int, concurrency: int,
                    kv_dtype: str) -> tuple[list[float], dict[int, list[int] | None]]:
    """Bytes of each layer on one GPU of a TP group, and a memo of the balanced split per PP size: neither
    depends on the GPU, and the planner tries the same (TP, PP) on every GPU kind. Keyed by object
    identity, the objects kept so an id is never reused while cached."""
    key = (id(arch), id(loads), tp, context, concurrency, kv_dtype)
    hit = _LAYER_BYTES.get(key)
    if hit is None or hit[0] is not arch or hit[1] is not loads:
        if len(_LAYER_BYTES) > 16384:
            _LAYER_BYTES.clear()
        kv, state = _cache_per_layer(arch, context, concurrency, kv_dtype, tp)
        layer_bytes = [w / tp + k + s for w, k, s in zip(loads.layer_weights, kv, state, strict=True)]
        hit = _LAYER_BYTES[key] = (arch, loads, layer_bytes, {})
    return hit[2], hit[3]


class PlanSearch:
    """The fewest-GPU search of one model in one format at one load (context, concurrency, KV dtype), on any GPU
    kind and instance shape: the one definition :func:`fewest_gpus`, :func:`plan_for` and the cheapest-setup
    search (``pipeline/compute/setups.py``) share.

    What does not depend on the GPU (per-layer weight bytes, per-layer bytes per TP size) is computed once. Whether
    a (TP, PP) plan fits is its stage count (:meth:`stages_needed`) against PP; the count reads the GPU's memory and
    the engine, not the instance shape, so it is memoised per (GPU id, engine, TP): a caller trying one GPU kind in
    several instance sizes, or several PP sizes, counts once. The shape
    only decides which (TP, PP) pairs are candidates (:meth:`fewest` reads ``gpu.node_size``).
    Inputs are not validated here (:func:`check_load` does that, as :func:`fewest_gpus` does first)."""

    def __init__(self, arch: Architecture, fmt: str, context: int = 8192, concurrency: int = 1,
                 kv_cache_dtype: str = "bf16") -> None:
        self.arch, self.fmt, self.context, self.concurrency, self.kv = arch, fmt, context, concurrency, kv_cache_dtype
        self.loads = _weight_loads(arch, fmt)
        self.stored = effective_format(arch, fmt) if fmt == "native" else fmt
        self._needed: dict[tuple[str, Engine, int, bool], float] = {}

    def lower_bound(self, gpu: GPU, engine: Engine) -> int:
        """Fewer GPUs than this cannot hold the weights, whatever the instance shape (exact: see _lower_bound)."""
        return _lower_bound(self.arch, gpu, engine, self.loads)

    def _stages(self, gpu: GPU, engine: Engine, tp: int, pp: int) -> tuple[list[float], float, float, list[int]] | None:
        """The fit test: a positive budget after the engine's working memory, and a greedy split of the per-GPU
        layer bytes into at most PP stages under it. Returns (layer bytes, first extra, last extra, stage sizes)."""
        layer_bytes, first, last, budget = self._stage_inputs(gpu, engine, tp, pp)
        if budget <= 0:
            return None
        sizes = _stage_bounds(layer_bytes, first, last, pp, budget)
        return None if sizes is None else (layer_bytes, first, last, sizes)

    def _stage_inputs(self, gpu: GPU, engine: Engine, tp: int, pp: int) -> tuple[list[float], float, float, float]:
        """What a split of ``pp`` stages reads: the per-GPU bytes of each layer (MXFP4 repacking included), the first
        and last stage's extras and the budget after the engine's working memory."""
        first, last = self.stage_extras(tp, pp > 1)
        return (self.layer_bytes(gpu, engine, tp), first, last,
                engine.usable_bytes(gpu, tp) - engine.activation_bytes(self.arch, tp, gpu))

    def layer_bytes(self, gpu: GPU, engine: Engine, tp: int) -> list[float]:
        """The bytes of each layer on one GPU of a TP group: weights, cache and state, MXFP4 repacking included."""
        layer_bytes, _ = _per_gpu_layers(self.arch, self.loads, tp, self.context, self.concurrency, self.kv)
        repack = self._repack(gpu, engine, tp)
        if repack is not None:
            layer_bytes = [b + r for b, r in zip(layer_bytes, repack, strict=True)]
        return layer_bytes

    def stage_extras(self, tp: int, several: bool) -> tuple[float, float]:
        """The first and last stage's extras on one GPU (``several``: the tied embedding copied to the last)."""
        return self.loads.first_extra / tp, (self.loads.last_extra + (self.loads.tied_copy if several else 0.0)) / tp

    def _repack(self, gpu: GPU, engine: Engine, tp: int) -> list[float] | None:
        """Per-layer bytes an engine adds on one rank when it repacks MXFP4 experts for its kernels (None: none)."""
        if not engine.repacks(self.stored):
            return None
        key = (id(self.arch), gpu.is_nvidia, bool(gpu.supports_mxfp4), engine.id, tp)
        hit = _REPACKS.get(key)
        if hit is None or hit[0] is not self.arch:
            if len(_REPACKS) > 4096:
                _REPACKS.clear()
            hit = _REPACKS[key] = (self.arch, [engine.repack_extra_bytes(self.arch, "mxfp4", gpu, tp, range(i, i + 1))
                                               for i in range(self.arch.num_layers)])
        return hit[1]

    def stages_needed(self, gpu: GPU, engine: Engine, tp: int, several: bool) -> float:
        """The fewest pipeline stages of TP ``tp`` that hold the model under the budget (one stage, or
        ``several``: the tied embedding copied to the last stage); ``math.inf`` when none do (a layer alone is above
        the budget, or no budget is left after the engine's working memory). Memoised per (GPU id, engine, TP)."""
        key = (gpu.id, engine, tp, several)
        hit = self._needed.get(key)
        if hit is None:
            layer_bytes, first, last, budget = self._stage_inputs(gpu, engine, tp, 2 if several else 1)
            hit = self._needed[key] = stage_count(stage_loads(layer_bytes, first, last), budget) if budget > 0 \
                else math.inf
        return hit

    def fits(self, gpu: GPU, engine: Engine, tp: int, pp: int) -> bool:
        """Whether the (TP, PP) plan holds the model: its stage count is at most PP (a greedy split into fewer
        stages is split further, as long as PP is at most the layer count)."""
        return pp <= self.arch.num_layers and self.stages_needed(gpu, engine, tp, pp > 1) <= pp

    def fewest(self, gpu: GPU, engine: Engine, max_gpus: int = MAX_GPUS) -> tuple[int, int, int] | None:
        """(GPUs, TP, PP) of the smallest plan that fits, largest TP first among equal counts; None past max_gpus."""
        arch = self.arch
        n, tp = fewest_layout(lambda t: self.stages_needed(gpu, engine, t, False) <= 1,
                              lambda t: self.stages_needed(gpu, engine, t, True),
                              lambda t: engine.tensor_parallel and valid_tensor_parallel(arch, t),
                              self.lower_bound(gpu, engine), gpu.node_size, arch.num_layers, engine.tensor_parallel,
                              max_gpus, gpu.node_size)
        return None if n is None else (n, tp, n // tp)

    def plan(self, gpu: GPU, engine: Engine, tp: int, pp: int, force: bool = False) -> Plan | None:
        """The plan of one (TP, PP): stages balanced (PP > 1) and memory per stage; None when it does not fit,
        unless ``force`` (an exact GPU count asked for: the plan is shown with a negative headroom)."""
        found = self._stages(gpu, engine, tp, pp)
        arch, loads = self.arch, self.loads
        if found is None:
            if not force or pp > arch.num_layers:
                return None
            layer_bytes, _ = _per_gpu_layers(arch, loads, tp, self.context, self.concurrency, self.kv)
            first = loads.first_extra / tp
            last = (loads.last_extra + (loads.tied_copy if pp > 1 else 0.0)) / tp
            sizes = (_balanced(layer_bytes, first, last, pp) if pp > 1 else None) or [arch.num_layers]
            found = (layer_bytes, first, last, sizes)
        layer_bytes, first, last, sizes = found
        kv, state = _cache_per_layer(arch, self.context, self.concurrency, self.kv, tp)
        _, balanced = _per_gpu_layers(arch, loads, tp, self.context, self.concurrency, self.kv)
        if pp > 1:
            if pp not in balanced:
                balanced[pp] = _balanced(layer_bytes, first, last, pp)
            sizes = balanced[pp] or sizes
        repack = self._repack(gpu, engine, tp) or [0.0] * arch.num_layers
        activations = engine.activation_bytes(arch, tp, gpu)
        usable = engine.usable_bytes(gpu, tp)
        stages, start = [], 0
        overhead = engine.overhead_bytes(gpu, tp)
        for k, size in enumerate(sizes):
            idx = range(start, start + size)
            w = sum(loads.layer_weights[i] / tp + repack[i] for i in idx) + (first if k == 0 else 0.0) + \
                (last if k == pp - 1 else 0.0)
            kvb, st = sum(kv[i] for i in idx), sum(state[i] for i in idx)
            total = w + kvb + st + activations + overhead
            stages.append(StageMemory(stage=k, layers=(start, start + size - 1), weights=w / GIB, kv_cache=kvb / GIB,
                                      recurrent_state=st / GIB, activations=activations / GIB,
                                      engine_overhead=overhead / GIB, total=total / GIB))
            start += size
        largest = max(s.total for s in stages)
        per_node = max(1, gpu.node_size // tp) * tp
        return Plan(gpus=tp * pp, tensor_parallel=tp, pipeline_parallel=pp, nodes=math.ceil(tp * pp / per_node),
                    gpus_per_node=gpu.node_size, layers_per_stage=tuple(sizes), stages=tuple(stages),
                    usable_gib=(usable + overhead) / GIB, headroom_gib=(usable + overhead) / GIB - largest)


def stage_weights(arch: Architecture, fmt: str, tp: int, pp: int) -> list[tuple[range, float]]:
    """(decoder layers, weight bytes on one GPU) of each of ``pp`` stages split to minimise the largest stage, fit
    or not (the engine start-up model reports a plan that does not fit too); ``pp`` at most the layer count.
    Memoised per (model object, format, TP, PP): the same for every GPU kind and load (the serving rule asks
    it for each GPU kind, and the balanced split is a fifth of a cold setups run)."""
    key = (id(arch), fmt, tp, pp)
    hit = _STAGE_WEIGHTS.get(key)
    if hit is None or hit[0] is not arch:
        if len(_STAGE_WEIGHTS) > 4096:
            _STAGE_WEIGHTS.clear()
        hit = _STAGE_WEIGHTS[key] = (arch, _stage_weights(arch, fmt, tp, pp))
    return list(hit[1])


_STAGE_WEIGHTS: dict[tuple, tuple[Architecture, tuple[tuple[range, float], ...]]] = model_memo()


def _stage_weights(arch: Architecture, fmt: str, tp: int, pp: int) -> tuple[tuple[range, float], ...]:
    loads = _weight_loads(arch, fmt)
    pp = max(1, min(pp, arch.num_layers))
    first, last = loads.first_extra / tp, (loads.last_extra + (loads.tied_copy if pp > 1 else 0.0)) / tp
    layer_bytes = [w / tp for w in loads.layer_weights]
    sizes = _balanced(layer_bytes, first, last, pp) if pp > 1 else [arch.num_layers]
    out, start = [], 0
    for k, size in enumerate(sizes or [arch.num_layers]):
        w = sum(layer_bytes[start:start + size]) + (first if k == 0 else 0.0) + (last if k == len(sizes) - 1 else 0.0)
        out.append((range(start, start + size), w))
        start += size
    return tuple(out)


def check_context(arch: Architecture, context: int) -> None:
    if context <= 0:
        raise ContextTooLongError(f"context must be a positive token count, got {context}")
    if arch.max_context is not None and context > arch.max_context:
        raise ContextTooLongError(f"{arch.model}: context {context:,} is above the model's maximum "
                                  f"{arch.max_context:,} (max_position_embeddings)")


def _lower_bound(arch: Architecture, gpu: GPU, engine: Engine, loads: _Loads) -> int:
    """No deployment of fewer GPUs can hold the weights: each GPU takes at most its budget (with the smallest
    activation allowance any TP size gets), so n >= total weights / budget. Skipping those n is exact."""
    return lower_bound(_total(loads), lower_bound_budget(arch, gpu, engine))


def lower_bound_budget(arch: Architecture, gpu: GPU, engine: Engine) -> float:
    """The most weight bytes any GPU of a plan holds: its memory after the smallest working memory of any TP size."""
    return engine.usable_bytes(gpu, 1) - engine.activation_bytes(arch, 64, gpu)


def _total(loads: _Loads) -> float:
    return sum(loads.layer_weights) + loads.first_extra + loads.last_extra


def weight_total(arch: Architecture, fmt: str) -> float:
    """The weight bytes the lower bound divides (every layer and both stages' extras, the tied copy left out)."""
    return _total(_weight_loads(arch, fmt))


def check_load(arch: Architecture, context: int, concurrency: int, kv_cache_dtype: str) -> None:
    """The errors a placement question raises before any search, in this order: context, concurrency, KV dtype."""
    check_context(arch, context)
    if concurrency < 1:
        raise SizingError(f"concurrency must be >= 1, got {concurrency}")
    cache_bytes(kv_cache_dtype)  # validates the name


def fewest_gpus(arch: Architecture, gpu: GPU, engine: Engine, fmt: str, context: int = 8192, concurrency: int = 1,
                kv_cache_dtype: str = "bf16", max_gpus: int = MAX_GPUS) -> Placement:
    """The smallest GPU count (and its plan) that holds the weights, the cache of ``concurrency`` requests of
    ``context`` tokens, the recurrent state and the engine's working memory, or ``gpus=None`` with the reason."""
    check_load(arch, context, concurrency, kv_cache_dtype)
    support: Support = engine.supports(gpu, fmt, arch)
    stored = effective_format(arch, fmt) if fmt == "native" else fmt
    common = dict(gpu=gpu.id, engine=engine.id, format=fmt, weight_format=stored, context=context,
                  concurrency=concurrency, kv_cache_dtype=kv_cache_dtype, native_support=support.native,
                  support_note=support.note)
    if not support.runs:
        return Placement(fits=False, gpus=None, plan=None, reason=support.note, **common)
    search = PlanSearch(arch, fmt, context, concurrency, kv_cache_dtype)
    found = search.fewest(gpu, engine, max_gpus)
    if found is not None:
        n, tp, pp = found
        return Placement(fits=True, gpus=n, plan=search.plan(gpu, engine, tp, pp), **common)
    return Placement(fits=False, gpus=None, plan=None,
                     reason=f"needs more than {max_gpus} GPUs under {engine.name}'s parallelism rules", **common)


def plan_for(arch: Architecture, gpu: GPU, engine: Engine, fmt: str, tp: int, pp: int, context: int = 8192,
             concurrency: int = 1, kv_cache_dtype: str = "bf16") -> Plan | None:
    """Memory of one given (TP, PP) deployment, or None when it does not fit; raises when TP is invalid."""
    if engine.tensor_parallel and not valid_tensor_parallel(arch, tp):
        raise SizingError(f"{arch.model}: tensor-parallel size {tp} does not divide the attention heads")
    if not engine.tensor_parallel and tp != 1:
        raise SizingError(f"{engine.name} splits layers, not heads: tensor-parallel size must be 1")
    return PlanSearch(arch, fmt, context, concurrency, kv_cache_dtype).plan(gpu, engine, tp, pp)
