"""How an engine pages its KV pool: the cache spec of every layer on one GPU, vLLM's cache groups, block sizes and
per-request blocks, and what the engine logs as "GPU KV cache size" and "Maximum concurrency".

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
from dataclasses import dataclass
from functools import cached_property

from .architecture import Architecture
from .kv_cache import cache_bytes
from .layers import (
    ChunkedLocalAttention,
    CompressedSparseAttention,
    FullAttention,
    MLAAttention,
    ParallelHybrid,
    SlidingWindowAttention,
)
from .memo import model_memo

BLOCK_SIZE = 16  # vLLM's default KV block (tokens per page)
HYBRID_GROUP_SLACK = 1.25  # vLLM groups layers by the largest count when the counts differ by less than this


@dataclass(frozen=True)
class Spec:
    """What one layer caches on one GPU. ``kind``: full, sliding (``window``), mla, state, other (a cache that grows
    with context by its own rule, e.g. DeepSeek-V4's compressed attention: ``request_bytes`` per request of the
    reference length ``ref_len``)."""

    kind: str
    token_bytes: float = 0.0  # per cached token
    state_bytes: float = 0.0  # per request, fixed
    window: int = 0

    @cached_property
    def key(self) -> tuple:  # (cached: specs are memoised per model and asked once per GPU kind, #28)
        return (self.kind, round(self.token_bytes, 3), round(self.state_bytes, 3), self.window)


def _state(m: object, tp: int, f32: bool) -> float:
    """A recurrent layer's state bytes per request; ``f32``: with every state tensor in float32 (llama.cpp)."""
    if f32 and hasattr(m, "conv_dtype_bytes"):
        update = {k: 4 for k in ("conv_dtype_bytes", "ssm_dtype_bytes", "state_dtype_bytes") if hasattr(m, k)}
        m = m.model_copy(update=update)  # type: ignore[attr-defined]
    return m.state_bytes(tp)  # type: ignore[attr-defined]


def layer_specs(arch: Architecture, layers: range, kv_dtype: str, tp: int, context: int,
                state_f32: bool = False) -> list[Spec]:
    """The cache specs of ``layers`` on one GPU of a TP group (a ParallelHybrid layer gives two); ``state_f32``:
    recurrent state kept in float32 whatever the checkpoint dtype (llama.cpp's r/s buffers). Memoised per model
    object and arguments (#28: the same for every GPU kind; the serving rule asks for each)."""
    key = (id(arch), layers.start, layers.stop, layers.step, kv_dtype, tp, context, state_f32)
    hit = _SPECS.get(key)
    if hit is None or hit[0] is not arch:
        if len(_SPECS) > 8192:
            _SPECS.clear()
        hit = _SPECS[key] = (arch, tuple(_layer_specs(arch, layers, kv_dtype, tp, context, state_f32)))
    return list(hit[1])


_SPECS: dict[tuple, tuple[Architecture, tuple[Spec, ...]]] = model_memo()


def _layer_specs(arch: Architecture, layers: range, kv_dtype: str, tp: int, context: int,
                 state_f32: bool) -> list[Spec]:
    b = cache_bytes(kv_dtype)
    out: list[Spec] = []
    for i in layers:
        m = arch.layers[i].mixer
        if m is None:
            continue
        if isinstance(m, ParallelHybrid):
            out.append(Spec("full", token_bytes=m.attention.kv_bytes_per_token(b, tp)))
            out.append(Spec("state", state_bytes=_state(m.ssm, tp, state_f32)))
        elif isinstance(m, SlidingWindowAttention | ChunkedLocalAttention):
            window = m.window if isinstance(m, SlidingWindowAttention) else m.chunk
            per_token = m.kv_bytes_per_request(1, b, tp)
            if per_token:
                out.append(Spec("sliding", token_bytes=per_token, window=window))
        elif isinstance(m, FullAttention):
            if m.kv_bytes_per_token(b, tp):
                out.append(Spec("full", token_bytes=m.kv_bytes_per_token(b, tp)))
        elif isinstance(m, MLAAttention):
            out.append(Spec("mla", token_bytes=m.kv_bytes_per_token(b, tp)))
        elif isinstance(m, CompressedSparseAttention):
            out.append(Spec("other", token_bytes=m.kv_bytes_per_request(context, b, tp) / max(context, 1)))
        elif m.state_bytes(tp):
            out.append(Spec("state", state_bytes=_state(m, tp, state_f32)))
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


def _cdiv(a: float, b: float) -> int:
    return int(-(-a // b))


def vllm_pool(specs: list[Spec], pool_bytes: float, max_model_len: int, mnbt: int, *, state_pages: int = 1,
              concurrency_tokens: bool = True, hybrid_manager: bool = True) -> Pool:
    """vLLM V1's paging of ``pool_bytes`` for the layers of one GPU (see the module docstring)."""
    if not specs:
        return Pool(tokens=0, max_concurrency=math.inf, request_bytes=0.0, block_size=BLOCK_SIZE, groups=0)
    if not hybrid_manager:  # every attention layer sized as full attention (older vLLM for some hybrids)
        specs = [Spec("full", token_bytes=s.token_bytes) if s.kind == "sliding" else s for s in specs]
    by_type: dict[tuple, list[Spec]] = {}
    for s in specs:
        by_type.setdefault(s.key, []).append(s)
    kinds = [v[0] for v in by_type.values()]
    attention = [s for s in kinds if s.kind != "state"]
    state_page = max((s.state_bytes for s in kinds if s.kind == "state"), default=0.0)
    # block sizes: one uniform page; attention blocks grow until a page holds the largest attention page and any
    # state page (vLLM: kernel alignment 16 tokens)
    widest = max((s.token_bytes for s in attention), default=0.0)
    block = BLOCK_SIZE
    if state_page and widest:
        block = BLOCK_SIZE * _cdiv(state_page, widest * BLOCK_SIZE)
    page = max(block * widest, state_page)
    blocks_of = {s.key: (int(page // s.token_bytes) if s.token_bytes else block) for s in attention}
    counts = [len(v) for v in by_type.values()]
    group_size = min(counts)
    if max(counts) < HYBRID_GROUP_SLACK * group_size:
        group_size = max(counts)
    per_type_groups = {k: _cdiv(len(v), group_size) for k, v in by_type.items()}
    groups = sum(per_type_groups.values())
    num_blocks = max(int(pool_bytes // (page * group_size)), 0) if pool_bytes > 0 else 0
    per_request = 0
    for k, v in by_type.items():
        s = v[0]
        if s.kind == "state":
            need = state_pages
        elif s.kind == "sliding":
            need = _cdiv(min(s.window - 1 + mnbt, max_model_len), blocks_of[k]) + 1
        else:
            need = _cdiv(max_model_len, blocks_of[k])
        per_request += need * per_type_groups[k]
    max_conc = num_blocks / per_request if per_request else math.inf
    if concurrency_tokens or groups == 1:
        tokens = int(max_conc * max_model_len) if groups > 1 else num_blocks * min(blocks_of.values(), default=block)
    else:
        tokens = num_blocks // groups * min(blocks_of.values(), default=block)
    note = f"{groups} cache group(s) of {group_size} layers, {min(blocks_of.values(), default=block)}-token blocks"
    return Pool(tokens=tokens, max_concurrency=max_conc, request_bytes=per_request * page * group_size,
                block_size=min(blocks_of.values(), default=block), groups=groups, note=note)


def sglang_pool(specs: list[Spec], pool_bytes: float, max_model_len: int, *, hybrid_swa: bool = True,
                swa_ratio: float = 0.8) -> Pool:
    """SGLang's token pool: full-attention (and MLA) layers share ``cell_size`` bytes per token; sliding layers a
    second pool of ``swa_ratio`` x as many tokens (or the same pool when the model turns hybrid SWA off); recurrent
    state is kept in its own pool, reserved here for the requests the token pool serves at ``max_model_len``."""
    full = sum(s.token_bytes for s in specs if s.kind in ("full", "mla", "other"))
    swa = sum(s.token_bytes for s in specs if s.kind == "sliding")
    state = sum(s.state_bytes for s in specs if s.kind == "state")
    if not hybrid_swa:
        full, swa = full + swa, 0.0
    cell = full + swa_ratio * swa
    if cell <= 0:
        return Pool(tokens=0, max_concurrency=math.inf, request_bytes=state, block_size=1, groups=0)
    # state for as many requests as the pool's tokens serve at max_model_len: tokens x (cell + state / len) = pool
    tokens = max(int(pool_bytes / (cell + state / max_model_len)), 0) if pool_bytes > 0 else 0
    request = max_model_len * full + state
    if swa:
        request += min(max_model_len, max(s.window for s in specs if s.kind == "sliding")) * swa
    return Pool(tokens=tokens, max_concurrency=tokens / max_model_len, request_bytes=request, block_size=1,
                groups=1 + (swa > 0), note=f"cell {cell:,.0f} B per token" + (", hybrid SWA pool" if swa else ""))


def pad(n: int, to: int) -> int:
    return _cdiv(n, to) * to


def llamacpp_pool(specs: list[Spec], n_ctx: int, n_seq: int, n_ubatch: int, *, unified: bool = False,
                  swa_full: bool = False) -> tuple[float, float]:
    """llama.cpp's KV buffer and recurrent-state buffer bytes for these layers (specs built with ``state_f32``):
    ``n_ctx`` cells in total (``n_ctx / n_seq`` per sequence), sliding layers capped per sequence, one recurrent
    state per sequence."""
    kv = 0.0
    per_seq = n_ctx // max(n_seq, 1)
    for s in specs:
        if s.kind in ("full", "mla", "other"):
            kv += n_ctx * s.token_bytes
        elif s.kind == "sliding":
            if swa_full:
                kv += n_ctx * s.token_bytes
            elif unified:
                kv += pad(min(n_ctx, s.window * n_seq + n_ubatch), 256) * s.token_bytes
            else:
                kv += n_seq * pad(min(per_seq, s.window + n_ubatch), 256) * s.token_bytes
    state = sum(s.state_bytes for s in specs if s.kind == "state") * n_seq
    return kv, state
