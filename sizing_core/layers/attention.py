"""Attention mixers: full, sliding-window, chunked-local, MLA (one latent per token), compressed sparse."""

from __future__ import annotations

import math
from typing import ClassVar

from ..cache_spec import (
    CacheSpec,
    ChunkedLocalSpec,
    CompressedSparseSpec,
    FullAttentionSpec,
    MLALatentSpec,
    SlidingWindowSpec,
)
from ..record import checked, record
from ..tensors import Role, Tensor, matrix, vector
from .base import Kind, per_rank


# --------------------------------------------------------------------------------------------- mixers
@record
class FullAttention(Kind):
    """Multi-head / grouped-query attention caching K and V for every token."""

    kind: ClassVar[str] = "full_attention"
    attends: ClassVar[bool] = True
    text_rank: ClassVar[int | None] = 1
    num_heads: int = checked(kind=int, gt=0)
    num_kv_heads: int = checked(kind=int, gt=0)
    head_dim: int = checked(kind=int, gt=0)
    v_head_dim: int | None = None  # differs from head_dim in MiMo-V2
    q_gate: bool = False  # Qwen3-Next/3.5 gated attention: q_proj emits a gate too (2x)
    qk_norm: bool = False
    bias: bool = False  # q/k/v biases (Qwen2, gpt-oss)
    k_bias: bool = True  # with ``bias``: k_proj has one too (Whisper's k_proj has none)
    o_bias: bool = False
    sinks: bool = False  # gpt-oss learned attention sinks, one per head
    k_eq_v: bool = False  # Gemma 4 global layers: keys double as values, one cached tensor
    fused_qkv: bool = False  # Phi-3 stores one qkv_proj
    kv_shared: bool = False  # Gemma 3n's last layers reuse an earlier layer's KV: they cache nothing themselves
    qk_norm_full: bool = False  # OLMo 2 / MiniMax-M2: q_norm over all heads (H*d), k_norm over Hkv*d
    #: CogVLM's visual expert: a second set of projections for image tokens (each token uses one; one KV cache)
    expert_copies: int = 1

    def describe(self, layers: int) -> str:
        return f"full attention ({self.num_heads} heads, {self.num_kv_heads} KV) on {layers}"

    @property
    def vdim(self) -> int:
        return self.v_head_dim or self.head_dim

    def tensors(self, prefix: str, hidden: int, layer: int) -> list[Tensor]:
        p = f"{prefix}.self_attn"
        q_out = self.num_heads * self.head_dim * (2 if self.q_gate else 1)
        k_out = self.num_kv_heads * self.head_dim
        v_out = 0 if self.k_eq_v else self.num_kv_heads * self.vdim
        if self.fused_qkv:
            out = [matrix(p, "qkv_proj", Role.ATTN_QKV, q_out + k_out + v_out, hidden, layer)]
        else:
            out = [matrix(p, "q_proj", Role.ATTN_Q, q_out, hidden, layer),
                   matrix(p, "k_proj", Role.ATTN_K, k_out, hidden, layer)]
            if v_out:
                out.append(matrix(p, "v_proj", Role.ATTN_V, v_out, hidden, layer))
        out.append(matrix(p, "o_proj", Role.ATTN_OUTPUT, hidden, self.num_heads * self.vdim, layer))
        if self.bias:
            out.append(vector(p, "qkv_bias", q_out + (k_out if self.k_bias else 0) + v_out, layer))
        if self.o_bias:
            out.append(vector(p, "o_proj_bias", hidden, layer))
        if self.qk_norm:
            width = q_out // (2 if self.q_gate else 1) + k_out if self.qk_norm_full else 2 * self.head_dim
            out.append(vector(p, "qk_norm", width, layer))
        if self.sinks:
            out.append(vector(p, "sinks", self.num_heads, layer))
        base = list(out)
        for k in range(1, self.expert_copies):
            out += [Tensor(f"{t.name}.expert{k}", t.role, t.rows, t.cols, t.count, t.layer) for t in base]
        return out

    def _bytes_per_cached_token(self, cache_bytes: float, tp: int) -> float:
        if self.kv_shared:
            return 0.0
        per_head = self.head_dim + (0 if self.k_eq_v else self.vdim)
        return per_rank(self.num_kv_heads, tp) * per_head * cache_bytes

    def cached_tokens(self, context: int) -> int:
        return context

    def kv_bytes_per_token(self, cache_bytes: float, tp: int) -> float:
        return self._bytes_per_cached_token(cache_bytes, tp)

    def kv_bytes_per_request(self, context: int, cache_bytes: float, tp: int) -> float:
        return self.cached_tokens(context) * self._bytes_per_cached_token(cache_bytes, tp)

    def state_bytes(self, tp: int) -> float:
        return 0.0

    def cache_specs(self, cache_bytes: float, tp: int, context: int, state_f32: bool = False) -> list[CacheSpec]:
        per_token = self.kv_bytes_per_token(cache_bytes, tp)
        return [FullAttentionSpec(token_bytes=per_token)] if per_token else []


@record
class SlidingWindowAttention(FullAttention):
    """Attention over the last ``window`` tokens: the cache stops growing at the window."""

    kind: ClassVar[str] = "sliding_attention"
    text_rank: ClassVar[int | None] = 3
    window: int = checked(kind=int, gt=0)

    def describe(self, layers: int) -> str:
        return f"sliding window {self.window} on {layers}"

    def cached_tokens(self, context: int) -> int:
        return min(context, self.window)

    def kv_bytes_per_token(self, cache_bytes: float, tp: int) -> float:
        return 0.0

    def cache_specs(self, cache_bytes: float, tp: int, context: int, state_f32: bool = False) -> list[CacheSpec]:
        per_token = self.kv_bytes_per_request(1, cache_bytes, tp)
        return [SlidingWindowSpec(token_bytes=per_token, sliding_window=self.window)] if per_token else []


@record
class ChunkedLocalAttention(FullAttention):
    """Llama 4 local layers: attention within chunks of ``chunk`` tokens; at most one chunk is cached."""

    kind: ClassVar[str] = "chunked_attention"
    text_rank: ClassVar[int | None] = 2
    chunk: int = checked(kind=int, gt=0)

    def describe(self, layers: int) -> str:
        return f"chunked attention {self.chunk} on {layers}"

    def cached_tokens(self, context: int) -> int:
        return min(context, self.chunk)

    def kv_bytes_per_token(self, cache_bytes: float, tp: int) -> float:
        return 0.0

    def cache_specs(self, cache_bytes: float, tp: int, context: int, state_f32: bool = False) -> list[CacheSpec]:
        per_token = self.kv_bytes_per_request(1, cache_bytes, tp)
        return [ChunkedLocalSpec(token_bytes=per_token, sliding_window=self.chunk)] if per_token else []


@record
class MLAAttention(Kind):
    """Multi-head latent attention (DeepSeek V2/V3, Kimi K2, GLM-5): caches one latent per token.

    The cached latent is ``kv_lora_rank + qk_rope_head_dim`` wide, with no factor 2 for K and V and no head
    dimension, so every tensor-parallel rank holds all of it. DeepSeek sparse attention (V3.2, GLM-5) adds an
    indexer key per token, stored as vLLM's ``DeepseekV32IndexerCache`` does whatever the main cache dtype: FP8 key
    of ``indexer_head_dim`` bytes plus one float32 scale per 128 values (128 + 4 = 132 B per token and layer for
    DeepSeek-V3.2 / GLM-5). With an FP8 cache those sparse models use FlashMLA's ``fp8_ds_mla`` layout for the
    latent: 512 FP8 values + 4 float32 scales (one per 128) + the 64 rope values kept in BF16 = 656 B.
    """

    kind: ClassVar[str] = "mla"
    attends: ClassVar[bool] = True
    text_rank: ClassVar[int | None] = 0
    num_heads: int = checked(kind=int, gt=0)
    q_lora_rank: int | None = None
    kv_lora_rank: int = checked(kind=int, gt=0)
    qk_nope_head_dim: int = checked(kind=int, ge=0)
    qk_rope_head_dim: int = checked(kind=int, ge=0)
    v_head_dim: int = checked(kind=int, gt=0)
    indexer_heads: int = 0
    indexer_head_dim: int = 0

    def describe(self, layers: int) -> str:
        return f"MLA ({self.kv_lora_rank} + {self.qk_rope_head_dim} latent) on {layers}"

    def tensors(self, prefix: str, hidden: int, layer: int) -> list[Tensor]:
        p = f"{prefix}.self_attn"
        qk = self.qk_nope_head_dim + self.qk_rope_head_dim
        out: list[Tensor] = []
        if self.q_lora_rank:
            out += [matrix(p, "q_a_proj", Role.ATTN_Q_A, self.q_lora_rank, hidden, layer),
                    vector(p, "q_a_layernorm", self.q_lora_rank, layer),
                    matrix(p, "q_b_proj", Role.ATTN_Q_B, self.num_heads * qk, self.q_lora_rank, layer)]
        else:
            out.append(matrix(p, "q_proj", Role.ATTN_Q, self.num_heads * qk, hidden, layer))
        out += [
            matrix(p, "kv_a_proj_with_mqa", Role.ATTN_KV_A, self.kv_lora_rank + self.qk_rope_head_dim, hidden, layer),
            vector(p, "kv_a_layernorm", self.kv_lora_rank, layer),
            matrix(p, "kv_b_proj", Role.ATTN_KV_B, self.num_heads * (self.qk_nope_head_dim + self.v_head_dim),
                   self.kv_lora_rank, layer),
            matrix(p, "o_proj", Role.ATTN_OUTPUT, hidden, self.num_heads * self.v_head_dim, layer),
        ]
        if self.indexer_heads:
            q_in = self.q_lora_rank or hidden
            d = self.indexer_head_dim
            out += [matrix(p, "indexer.wq_b", Role.ATTN_OTHER, self.indexer_heads * d, q_in, layer),
                    matrix(p, "indexer.wk", Role.ATTN_OTHER, d, hidden, layer),
                    vector(p, "indexer.k_norm", 2 * d, layer),
                    matrix(p, "indexer.weights_proj", Role.ATTN_OTHER, self.indexer_heads, hidden, layer)]
        return out

    def kv_bytes_per_token(self, cache_bytes: float, tp: int) -> float:
        if not self.indexer_head_dim:
            return (self.kv_lora_rank + self.qk_rope_head_dim) * cache_bytes
        indexer = self.indexer_head_dim + math.ceil(self.indexer_head_dim / 128) * 4  # FP8 key + fp32 scales
        if cache_bytes == 1:  # fp8_ds_mla: FP8 latent + fp32 scale per 128 + BF16 rope part
            latent = self.kv_lora_rank + math.ceil(self.kv_lora_rank / 128) * 4 + self.qk_rope_head_dim * 2
        else:
            latent = (self.kv_lora_rank + self.qk_rope_head_dim) * cache_bytes
        return latent + indexer

    def kv_bytes_per_request(self, context: int, cache_bytes: float, tp: int) -> float:
        return context * self.kv_bytes_per_token(cache_bytes, tp)

    def state_bytes(self, tp: int) -> float:
        return 0.0

    def cache_specs(self, cache_bytes: float, tp: int, context: int, state_f32: bool = False) -> list[CacheSpec]:
        return [MLALatentSpec(token_bytes=self.kv_bytes_per_token(cache_bytes, tp))]


@record
class CompressedSparseAttention(Kind):
    """DeepSeek-V4 attention: one shared 512-wide KV head, a sliding window of raw tokens, and for layers with a
    ``compress_ratio`` a compressed cache of ``ceil(T / ratio)`` entries (ratio-4 layers also keep indexer keys).

    Modelled from the config's fields (``compress_ratios``, ``sliding_window``, ``head_dim``, ``index_head_dim``);
    no engine log was available to check it against, so ``docs/sizing.md`` marks it as an estimate.
    """

    kind: ClassVar[str] = "compressed_sparse_attention"
    attends: ClassVar[bool] = True
    text_rank: ClassVar[int | None] = 4
    num_heads: int = checked(kind=int, gt=0)
    head_dim: int = checked(kind=int, gt=0)
    q_lora_rank: int = checked(kind=int, gt=0)
    o_lora_rank: int = checked(kind=int, gt=0)
    o_groups: int = checked(kind=int, gt=0)
    window: int = checked(kind=int, gt=0)
    compress_ratio: int = checked(kind=int, ge=0)
    indexer_heads: int = 0
    indexer_head_dim: int = 0
    indexer_topk: int = 0  # compressed entries the indexer keeps per query (``index_topk``; 0: all of them)

    def describe(self, layers: int) -> str:
        return f"compressed sparse attention on {layers}"

    @property
    def _has_indexer(self) -> bool:
        return self.compress_ratio == 4 and self.indexer_heads > 0

    def attention_flops(self, context: int) -> float:
        """Attention FLOPs per prompt token, averaged over a prompt of ``context`` tokens (a token at position
        ``t`` attends ``t`` / 2 on average): every head scores and sums the window's raw tokens and the compressed
        entries it reads (the indexer's top-k on ratio-4 layers, all of them on the others) over the one shared
        ``head_dim``-wide head, and the indexer scores every compressed entry with its own heads."""
        span = context / 2
        entries = span / self.compress_ratio if self.compress_ratio else 0.0
        if self._has_indexer and self.indexer_topk:
            entries = min(entries, self.indexer_topk)
        flops = 2 * (min(span, self.window) + entries) * self.num_heads * 2 * self.head_dim
        if self._has_indexer:
            flops += 2 * (span / self.compress_ratio) * self.indexer_heads * self.indexer_head_dim
        return flops

    def tensors(self, prefix: str, hidden: int, layer: int) -> list[Tensor]:
        p = f"{prefix}.self_attn"
        d = self.head_dim
        out = [
            matrix(p, "wq_a", Role.ATTN_Q_A, self.q_lora_rank, hidden, layer),
            vector(p, "q_norm", self.q_lora_rank, layer),
            matrix(p, "wq_b", Role.ATTN_Q_B, self.num_heads * d, self.q_lora_rank, layer),
            matrix(p, "wkv", Role.ATTN_KV_A, d, hidden, layer),
            vector(p, "kv_norm", d, layer),
            matrix(p, "wo_a", Role.ATTN_OTHER, self.o_groups * self.o_lora_rank, self.num_heads * d // self.o_groups,
                   layer),
            matrix(p, "wo_b", Role.ATTN_OUTPUT, hidden, self.o_groups * self.o_lora_rank, layer),
            vector(p, "attn_sink", self.num_heads, layer),
        ]
        if self.compress_ratio:
            width = 2 if self.compress_ratio == 4 else 1  # overlapping windows on ratio-4 layers
            out.append(matrix(p, "compressor.wkv_gate", Role.ATTN_OTHER, 2 * width * d, hidden, layer))
        if self._has_indexer:
            di = self.indexer_head_dim
            out += [matrix(p, "indexer.wq_b", Role.ATTN_OTHER, self.indexer_heads * di, self.q_lora_rank, layer),
                    matrix(p, "indexer.compressor", Role.ATTN_OTHER, 4 * di, hidden, layer),
                    matrix(p, "indexer.weights_proj", Role.ATTN_OTHER, self.indexer_heads, hidden, layer)]
        return out

    def _compressed_width(self) -> int:
        return self.head_dim + (self.indexer_head_dim if self._has_indexer else 0)

    def kv_bytes_per_token(self, cache_bytes: float, tp: int) -> float:
        if not self.compress_ratio:
            return 0.0
        return self._compressed_width() * cache_bytes / self.compress_ratio

    def kv_bytes_per_request(self, context: int, cache_bytes: float, tp: int) -> float:
        window = min(context, self.window) * self.head_dim * cache_bytes
        if not self.compress_ratio:
            return window
        return window + math.ceil(context / self.compress_ratio) * self._compressed_width() * cache_bytes

    def state_bytes(self, tp: int) -> float:
        return 0.0

    def cache_specs(self, cache_bytes: float, tp: int, context: int, state_f32: bool = False) -> list[CacheSpec]:
        return [CompressedSparseSpec(token_bytes=self.kv_bytes_per_request(context, cache_bytes, tp)
                                     / max(context, 1))]
