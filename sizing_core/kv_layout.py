"""How an engine pages its KV pool: the cache specs of the layers on one GPU (``cache_spec``, each from its layer
class), vLLM's cache groups, block sizes and per-request blocks, and what the engine logs as "GPU KV cache size"
and "Maximum concurrency". The pool functions are generic over specs: each spec answers for its page bytes, its
blocks per request and how it grows (whole context, window, fixed state).

vLLM V1 (``vllm/v1/kv_cache_interface.py``, ``vllm/v1/core/kv_cache_utils.py``, read at 2025-2026 commits; notes in
``docs/calibration.md``):

- every layer has a spec: full attention and MLA cache ``block_size`` tokens per page (16 by default); a sliding
  window (or Llama 4's chunked-local attention) keeps at most ``window - 1 + max_num_batched_tokens`` tokens, plus one
  block, whatever the context; a linear-attention / SSM layer keeps one page of state per request (two since the
  hybrid prefix cache's ``align`` mode became the default);
- layers of one spec form groups of equal size (the fewest layers of any spec, or the most when they differ by less
  than 25%); every group shares one block pool and one page size, so a hybrid's attention block size is raised until
  an attention page holds at least one state page ("Setting attention block size to 2096 tokens");
- ``num_blocks = pool // (page x layers per group)``; a request of ``max_model_len`` tokens takes, in every group,
  the blocks its spec needs; maximum concurrency = blocks / blocks per request;
- "GPU KV cache size" was ``num_blocks // groups x smallest block size`` and is ``max concurrency x max_model_len``
  since the hybrid-log fix (vllm#38364 / #40694, after 0.19; we take it from 0.21): the same for a pure-attention
  model, very different for hybrids.

SGLang (``model_runner.profile_max_num_token``): one token pool of ``cell_size`` bytes per token (K and V of every
attention layer on the rank; the MLA latent once); sliding layers share a second pool of 0.8 x the full pool's
tokens (``swa_full_tokens_ratio``) except for models that turn the hybrid SWA pool off (gpt-oss, Gemma 2/3).

llama.cpp (``src/llama-kv-cache*.cpp``): ``n_ctx`` cells of every full-attention layer; sliding layers keep
``pad256(min(n_ctx_seq, n_swa + n_ubatch))`` cells per sequence; recurrent state in float32, one per sequence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .architecture import Architecture
from .cache_spec import CacheSpec, cdiv, pad
from .kv_cache import cache_bytes
from .memo import model_memo, remembered

BLOCK_SIZE = 16  # vLLM's default KV block (tokens per page)
HYBRID_GROUP_SLACK = 1.25  # vLLM groups layers by the largest count when the counts differ by less than this

def layer_specs(arch: Architecture, layers: range, kv_dtype: str, tp: int, context: int,
                state_f32: bool = False) -> tuple[CacheSpec, ...]:
    """The cache specs of ``layers`` on one GPU of a TP group, each from its layer class (``Kind.cache_specs``; a
    ParallelHybrid layer gives two); ``state_f32``: recurrent state kept in float32 whatever the checkpoint dtype
    (llama.cpp's r/s buffers). Memoised per model object and arguments (the same for every GPU kind; the serving
    rule asks for each): the same tuple object each time, so the pools can memoise their paging by it."""
    key = (id(arch), layers.start, layers.stop, layers.step, kv_dtype, tp, context, state_f32)
    hit = _SPECS.get(key)
    if hit is None or hit[0] is not arch:
        if len(_SPECS) > 8192:
            _SPECS.clear()
        hit = _SPECS[key] = (arch, tuple(_layer_specs(arch, layers, kv_dtype, tp, context, state_f32)))
    return hit[1]


_SPECS: dict[tuple, tuple[Architecture, tuple[CacheSpec, ...]]] = model_memo()


def _layer_specs(arch: Architecture, layers: range, kv_dtype: str, tp: int, context: int,
                 state_f32: bool) -> list[CacheSpec]:
    b = cache_bytes(kv_dtype)
    out: list[CacheSpec] = []
    for i in layers:
        m = arch.layers[i].mixer
        if m is not None:
            out += m.cache_specs(b, tp, context, state_f32)
    return out


@dataclass(frozen=True)
class Pool:
    """A KV pool paged as the engine does: tokens it reports, requests of ``max_model_len`` it holds at once, and
    the bytes one such request takes (on this GPU)."""

    tokens: int
    max_concurrency: float
    request_bytes: float
    block_size: int
    groups: int
    note: str = ""


@dataclass(frozen=True)
class Paging:
    """How vLLM pages one GPU's layers, whatever the pool's size: the page (bytes of one block of one group's
    layer), layers per group, groups, the blocks one request of ``max_model_len`` takes in all groups, and the
    smallest block (tokens)."""

    page: float
    group_size: int
    groups: int
    per_request: int
    block_size: int
    note: str


def vllm_pool(specs: Sequence[CacheSpec], pool_bytes: float, max_model_len: int, mnbt: int, *,
              state_pages: int = 1, concurrency_tokens: bool = True, hybrid_manager: bool = True) -> Pool:
    """vLLM V1's paging of ``pool_bytes`` for the layers of one GPU (see the module docstring)."""
    if not specs:
        return Pool(tokens=0, max_concurrency=math.inf, request_bytes=0.0, block_size=BLOCK_SIZE, groups=0)
    paging = vllm_paging(specs, max_model_len, mnbt, state_pages, hybrid_manager)
    page, group_size, groups, per_request = paging.page, paging.group_size, paging.groups, paging.per_request
    num_blocks = max(int(pool_bytes // (page * group_size)), 0) if pool_bytes > 0 else 0
    max_conc = num_blocks / per_request if per_request else math.inf
    if concurrency_tokens or groups == 1:
        tokens = int(max_conc * max_model_len) if groups > 1 else num_blocks * paging.block_size
    else:
        tokens = num_blocks // groups * paging.block_size
    return Pool(tokens=tokens, max_concurrency=max_conc, request_bytes=per_request * page * group_size,
                block_size=paging.block_size, groups=groups, note=paging.note)


def vllm_paging(specs: Sequence[CacheSpec], max_model_len: int, mnbt: int, state_pages: int = 1,
                hybrid_manager: bool = True) -> Paging:
    """:class:`Paging` of ``specs`` (non-empty), memoised per specs object (:func:`layer_specs`' tuples; an entry
    keeps its object) and arguments: the start-up figures of every GPU kind and layout of a model ask it again."""
    return remembered(_PAGING, (id(specs), max_model_len, mnbt, state_pages, hybrid_manager), specs,
                      lambda: _vllm_paging(specs, max_model_len, mnbt, state_pages, hybrid_manager))


_PAGING: dict[tuple, tuple[Sequence[CacheSpec], Paging]] = model_memo()


def _vllm_paging(specs: Sequence[CacheSpec], max_model_len: int, mnbt: int, state_pages: int,
                 hybrid_manager: bool) -> Paging:
    if not hybrid_manager:  # every attention layer sized as full attention (older vLLM for some hybrids)
        specs = [s.as_full_attention() for s in specs]
    by_type: dict[tuple, list[CacheSpec]] = {}
    for s in specs:
        by_type.setdefault(s.key, []).append(s)
    kinds = [CacheSpec.merge(v) for v in by_type.values()]
    attention = [s for s in kinds if s.request_state_bytes is None]
    state_page = max((b for s in kinds if (b := s.request_state_bytes) is not None), default=0.0)
    # block sizes: one uniform page; attention blocks grow until a page holds the largest attention page and any
    # state page (vLLM: kernel alignment 16 tokens)
    widest = max((s.token_bytes for s in attention), default=0.0)
    block = BLOCK_SIZE
    if state_page and widest:
        block = BLOCK_SIZE * cdiv(state_page, widest * BLOCK_SIZE)
    page = max(block * widest, state_page)
    blocks_of = {s.key: s.tokens_per_block(page, block) for s in attention}
    counts = [len(v) for v in by_type.values()]
    group_size = min(counts)
    if max(counts) < HYBRID_GROUP_SLACK * group_size:
        group_size = max(counts)
    per_type_groups = {k: cdiv(len(v), group_size) for k, v in by_type.items()}
    groups = sum(per_type_groups.values())
    per_request = 0
    for s in kinds:
        need = s.blocks_per_request(blocks_of.get(s.key, block), max_model_len, mnbt, state_pages)
        per_request += need * per_type_groups[s.key]
    smallest = min(blocks_of.values(), default=block)
    note = f"{groups} cache group(s) of {group_size} layers, {smallest}-token blocks"
    return Paging(page=page, group_size=group_size, groups=groups, per_request=per_request, block_size=smallest,
                  note=note)


def sglang_pool(specs: Sequence[CacheSpec], pool_bytes: float, max_model_len: int, *, hybrid_swa: bool = True,
                swa_ratio: float = 0.8) -> Pool:
    """SGLang's token pool: full-attention (and MLA) layers share ``cell_size`` bytes per token; sliding layers a
    second pool of ``swa_ratio`` x as many tokens (or the same pool when the model turns hybrid SWA off); recurrent
    state is kept in its own pool, reserved here for the requests the token pool serves at ``max_model_len``."""
    full = sum(b for s in specs if (b := s.context_token_bytes) is not None)
    swa = sum(b for s in specs if (b := s.window_token_bytes) is not None)
    state = sum(b for s in specs if (b := s.request_state_bytes) is not None)
    if not hybrid_swa:
        full, swa = full + swa, 0.0
    cell = full + swa_ratio * swa
    if cell <= 0:
        return Pool(tokens=0, max_concurrency=math.inf, request_bytes=state, block_size=1, groups=0)
    # state for as many requests as the pool's tokens serve at max_model_len: tokens x (cell + state / len) = pool
    tokens = max(int(pool_bytes / (cell + state / max_model_len)), 0) if pool_bytes > 0 else 0
    request = max_model_len * full + state
    if swa:
        request += min(max_model_len, max(s.window for s in specs if s.window_token_bytes is not None)) * swa
    return Pool(tokens=tokens, max_concurrency=tokens / max_model_len, request_bytes=request, block_size=1,
                groups=1 + (swa > 0), note=f"cell {cell:,.0f} B per token" + (", hybrid SWA pool" if swa else ""))


def llamacpp_pool(specs: Sequence[CacheSpec], n_ctx: int, n_seq: int, n_ubatch: int, *, unified: bool = False,
                  swa_full: bool = False) -> tuple[float, float]:
    """llama.cpp's KV buffer and recurrent-state buffer bytes for these layers (specs built with ``state_f32``):
    ``n_ctx`` cells in total (``n_ctx / n_seq`` per sequence), sliding layers capped per sequence, one recurrent
    state per sequence. Memoised per specs object (:func:`layer_specs`' tuples) and arguments."""
    return remembered(_LLAMACPP, (id(specs), n_ctx, n_seq, n_ubatch, unified, swa_full), specs,
                      lambda: _llamacpp_pool(specs, n_ctx, n_seq, n_ubatch, unified, swa_full))


_LLAMACPP: dict[tuple, tuple[Sequence[CacheSpec], tuple[float, float]]] = model_memo()


def _llamacpp_pool(specs: Sequence[CacheSpec], n_ctx: int, n_seq: int, n_ubatch: int, unified: bool,
                   swa_full: bool) -> tuple[float, float]:
    kv = 0.0
    for s in specs:
        kv += s.llamacpp_kv_bytes(n_ctx, n_seq, n_ubatch, unified=unified, swa_full=swa_full)
    state = sum(b for s in specs if (b := s.request_state_bytes) is not None) * n_seq
    return kv, state


__all__ = ["BLOCK_SIZE", "HYBRID_GROUP_SLACK", "Paging", "Pool", "layer_specs", "llamacpp_pool", "pad",
           "sglang_pool", "vllm_paging", "vllm_pool"]
