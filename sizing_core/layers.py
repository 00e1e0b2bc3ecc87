"""One small class per layer kind, each knowing its own parameters, KV bytes per token and fixed state.

The shape follows vLLM's ``vllm/v1/kv_cache_interface.py`` (one spec class per attention kind). A decoder layer
is a *mixer* (attention, linear attention or SSM; absent in MLP-only layers of Nemotron-H / DeciLM) and an *MLP*
(dense, mixture of experts, or absent). Formulas are restated from ``docs/sizing.md`` (after FORMULAS.md).

Conventions for the cache methods, all per layer, per request, on one GPU of a tensor-parallel group of ``tp``:
``kv_bytes_per_token`` is the part that grows with context (0 for capped and recurrent kinds);
``kv_bytes_per_request`` is what a request of ``context`` tokens holds, caps applied;
``state_bytes`` is the fixed recurrent state, independent of context.
"""

from __future__ import annotations

import math
from typing import ClassVar

from .record import Record, checked, record
from .tensors import Role, Tensor, matrix, vector


def _per_rank(heads: int, tp: int) -> int:
    """Heads one rank holds: split while TP <= heads, replicated (1 per rank) beyond that, as vLLM does."""
    return max(1, math.ceil(heads / tp))


@record
class _Kind(Record):
    """Base of every mixer and MLP kind; ``kind`` names it (a class constant, as the configs' layer kinds)."""

    kind: ClassVar[str]


# --------------------------------------------------------------------------------------------- mixers
@record
class FullAttention(_Kind):
    """Multi-head / grouped-query attention caching K and V for every token."""

    kind: ClassVar[str] = "full_attention"
    num_heads: int = checked(kind=int, gt=0)
    num_kv_heads: int = checked(kind=int, gt=0)
    head_dim: int = checked(kind=int, gt=0)
    v_head_dim: int | None = None  # differs from head_dim in MiMo-V2
    q_gate: bool = False  # Qwen3-Next/3.5 gated attention: q_proj emits a gate too (2x)
    qk_norm: bool = False
    bias: bool = False  # q/k/v biases (Qwen2, gpt-oss)
    o_bias: bool = False
    sinks: bool = False  # gpt-oss learned attention sinks, one per head
    k_eq_v: bool = False  # Gemma 4 global layers: keys double as values, one cached tensor
    fused_qkv: bool = False  # Phi-3 stores one qkv_proj
    kv_shared: bool = False  # Gemma 3n's last layers reuse an earlier layer's KV: they cache nothing themselves
    qk_norm_full: bool = False  # OLMo 2 / MiniMax-M2: q_norm over all heads (H*d), k_norm over Hkv*d

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
            out.append(vector(p, "qkv_bias", q_out + k_out + v_out, layer))
        if self.o_bias:
            out.append(vector(p, "o_proj_bias", hidden, layer))
        if self.qk_norm:
            width = q_out // (2 if self.q_gate else 1) + k_out if self.qk_norm_full else 2 * self.head_dim
            out.append(vector(p, "qk_norm", width, layer))
        if self.sinks:
            out.append(vector(p, "sinks", self.num_heads, layer))
        return out

    def _bytes_per_cached_token(self, cache_bytes: float, tp: int) -> float:
        if self.kv_shared:
            return 0.0
        per_head = self.head_dim + (0 if self.k_eq_v else self.vdim)
        return _per_rank(self.num_kv_heads, tp) * per_head * cache_bytes

    def cached_tokens(self, context: int) -> int:
        return context

    def kv_bytes_per_token(self, cache_bytes: float, tp: int) -> float:
        return self._bytes_per_cached_token(cache_bytes, tp)

    def kv_bytes_per_request(self, context: int, cache_bytes: float, tp: int) -> float:
        return self.cached_tokens(context) * self._bytes_per_cached_token(cache_bytes, tp)

    def state_bytes(self, tp: int) -> float:
        return 0.0


@record
class SlidingWindowAttention(FullAttention):
    """Attention over the last ``window`` tokens: the cache stops growing at the window."""

    kind: ClassVar[str] = "sliding_attention"
    window: int = checked(kind=int, gt=0)

    def cached_tokens(self, context: int) -> int:
        return min(context, self.window)

    def kv_bytes_per_token(self, cache_bytes: float, tp: int) -> float:
        return 0.0


@record
class ChunkedLocalAttention(FullAttention):
    """Llama 4 local layers: attention within chunks of ``chunk`` tokens; at most one chunk is cached."""

    kind: ClassVar[str] = "chunked_attention"
    chunk: int = checked(kind=int, gt=0)

    def cached_tokens(self, context: int) -> int:
        return min(context, self.chunk)

    def kv_bytes_per_token(self, cache_bytes: float, tp: int) -> float:
        return 0.0


@record
class MLAAttention(_Kind):
    """Multi-head latent attention (DeepSeek V2/V3, Kimi K2, GLM-5): caches one latent per token.

    The cached latent is ``kv_lora_rank + qk_rope_head_dim`` wide, with no factor 2 for K and V and no head
    dimension, so every tensor-parallel rank holds all of it. DeepSeek sparse attention (V3.2, GLM-5) adds an
    indexer key per token, stored as vLLM's ``DeepseekV32IndexerCache`` does whatever the main cache dtype: FP8 key
    of ``indexer_head_dim`` bytes plus one float32 scale per 128 values (128 + 4 = 132 B per token and layer for
    DeepSeek-V3.2 / GLM-5). With an FP8 cache those sparse models use FlashMLA's ``fp8_ds_mla`` layout for the
    latent: 512 FP8 values + 4 float32 scales (one per 128) + the 64 rope values kept in BF16 = 656 B.
    """

    kind: ClassVar[str] = "mla"
    num_heads: int = checked(kind=int, gt=0)
    q_lora_rank: int | None = None
    kv_lora_rank: int = checked(kind=int, gt=0)
    qk_nope_head_dim: int = checked(kind=int, ge=0)
    qk_rope_head_dim: int = checked(kind=int, ge=0)
    v_head_dim: int = checked(kind=int, gt=0)
    indexer_heads: int = 0
    indexer_head_dim: int = 0

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


@record
class CompressedSparseAttention(_Kind):
    """DeepSeek-V4 attention: one shared 512-wide KV head, a sliding window of raw tokens, and for layers with a
    ``compress_ratio`` a compressed cache of ``ceil(T / ratio)`` entries (ratio-4 layers also keep indexer keys).

    Modelled from the config's fields (``compress_ratios``, ``sliding_window``, ``head_dim``, ``index_head_dim``);
    no engine log was available to check it against, so ``docs/sizing.md`` marks it as an estimate.
    """

    kind: ClassVar[str] = "compressed_sparse_attention"
    num_heads: int = checked(kind=int, gt=0)
    head_dim: int = checked(kind=int, gt=0)
    q_lora_rank: int = checked(kind=int, gt=0)
    o_lora_rank: int = checked(kind=int, gt=0)
    o_groups: int = checked(kind=int, gt=0)
    window: int = checked(kind=int, gt=0)
    compress_ratio: int = checked(kind=int, ge=0)
    indexer_heads: int = 0
    indexer_head_dim: int = 0

    @property
    def _has_indexer(self) -> bool:
        return self.compress_ratio == 4 and self.indexer_heads > 0

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


@record
class _Recurrent(_Kind):
    """Linear-attention / SSM layers: a fixed state per request, nothing that grows with context."""

    def kv_bytes_per_token(self, cache_bytes: float, tp: int) -> float:
        return 0.0

    def kv_bytes_per_request(self, context: int, cache_bytes: float, tp: int) -> float:
        return 0.0


@record
class GatedDeltaNet(_Recurrent):
    """Qwen3-Next / Qwen3.5 linear attention. State: conv ``(K-1) x (2*Hk*dk + Hv*dv)`` in ``conv_dtype_bytes``
    plus recurrent ``Hv x dv x dk`` in ``ssm_dtype_bytes`` (vLLM ``mamba_utils.gated_delta_net_state_shape``)."""

    kind: ClassVar[str] = "gated_deltanet"
    num_k_heads: int = checked(kind=int, gt=0)
    num_v_heads: int = checked(kind=int, gt=0)
    k_head_dim: int = checked(kind=int, gt=0)
    v_head_dim: int = checked(kind=int, gt=0)
    conv_kernel: int = checked(kind=int, gt=0)
    conv_dtype_bytes: float = 2
    ssm_dtype_bytes: float = 2

    def tensors(self, prefix: str, hidden: int, layer: int) -> list[Tensor]:
        p = f"{prefix}.linear_attn"
        key, value = self.num_k_heads * self.k_head_dim, self.num_v_heads * self.v_head_dim
        return [
            matrix(p, "in_proj_qkvz", Role.SSM_IN, 2 * key + 2 * value, hidden, layer),
            matrix(p, "in_proj_ba", Role.ATTN_OTHER, 2 * self.num_v_heads, hidden, layer),
            Tensor(f"{p}.conv1d", Role.SSM_CONV, 2 * key + value, self.conv_kernel, 1, layer),
            vector(p, "A_log_dt_bias", 2 * self.num_v_heads, layer),
            vector(p, "norm", self.v_head_dim, layer),
            matrix(p, "out_proj", Role.SSM_OUT, hidden, value, layer),
        ]

    def state_bytes(self, tp: int) -> float:
        channels = 2 * self.num_k_heads * self.k_head_dim + self.num_v_heads * self.v_head_dim
        conv = (self.conv_kernel - 1) * math.ceil(channels / tp) * self.conv_dtype_bytes
        ssm = _per_rank(self.num_v_heads, tp) * self.v_head_dim * self.k_head_dim * self.ssm_dtype_bytes
        return conv + ssm


@record
class KimiDeltaAttention(_Recurrent):
    """Kimi Delta Attention (Kimi Linear). State: three short convs ``(K-1) x 3*H*d`` in ``conv_dtype_bytes``
    plus recurrent ``H x d x d`` always in float32 (vLLM ``kda_state_dtype``)."""

    kind: ClassVar[str] = "kimi_delta_attention"
    num_heads: int = checked(kind=int, gt=0)
    head_dim: int = checked(kind=int, gt=0)
    conv_kernel: int = checked(kind=int, gt=0)
    gate_rank: int = 128  # low-rank f_a/f_b and g_a/g_b projections
    conv_dtype_bytes: float = 2

    def tensors(self, prefix: str, hidden: int, layer: int) -> list[Tensor]:
        p = f"{prefix}.self_attn"
        inner, r = self.num_heads * self.head_dim, self.gate_rank
        return [
            matrix(p, "q_proj", Role.ATTN_Q, inner, hidden, layer),
            matrix(p, "k_proj", Role.ATTN_K, inner, hidden, layer),
            matrix(p, "v_proj", Role.ATTN_V, inner, hidden, layer),
            Tensor(f"{p}.qkv_conv1d", Role.SSM_CONV, 3 * inner, self.conv_kernel, 1, layer),
            matrix(p, "f_a_proj", Role.ATTN_OTHER, r, hidden, layer),
            matrix(p, "f_b_proj", Role.ATTN_OTHER, inner, r, layer),
            matrix(p, "g_a_proj", Role.ATTN_OTHER, r, hidden, layer),
            matrix(p, "g_b_proj", Role.ATTN_OTHER, inner, r, layer),
            matrix(p, "b_proj", Role.ATTN_OTHER, self.num_heads, hidden, layer),
            vector(p, "A_log_dt_bias", self.num_heads + inner, layer),
            vector(p, "o_norm", self.head_dim, layer),
            matrix(p, "o_proj", Role.ATTN_OUTPUT, hidden, inner, layer),
        ]

    def state_bytes(self, tp: int) -> float:
        heads = _per_rank(self.num_heads, tp)
        conv = (self.conv_kernel - 1) * 3 * heads * self.head_dim * self.conv_dtype_bytes
        return conv + heads * self.head_dim * self.head_dim * 4


@record
class Mamba2(_Recurrent):
    """Mamba2 mixer (Nemotron-H). State: conv ``(K-1) x (I + 2*G*N)`` plus SSM ``nheads x head_dim x N``."""

    kind: ClassVar[str] = "mamba2"
    num_heads: int = checked(kind=int, gt=0)
    head_dim: int = checked(kind=int, gt=0)
    n_groups: int = checked(kind=int, gt=0)
    state_size: int = checked(kind=int, gt=0)
    conv_kernel: int = checked(kind=int, gt=0)
    conv_bias: bool = True
    conv_dtype_bytes: float = 2
    ssm_dtype_bytes: float = 2

    @property
    def inner(self) -> int:
        return self.num_heads * self.head_dim

    def tensors(self, prefix: str, hidden: int, layer: int) -> list[Tensor]:
        p = f"{prefix}.mixer"
        conv_ch = self.inner + 2 * self.n_groups * self.state_size
        return [
            matrix(p, "in_proj", Role.SSM_IN, 2 * self.inner + 2 * self.n_groups * self.state_size + self.num_heads,
                   hidden, layer),
            Tensor(f"{p}.conv1d", Role.SSM_CONV, conv_ch, self.conv_kernel, 1, layer),
            vector(p, "conv1d_bias_A_D_dt", (conv_ch if self.conv_bias else 0) + 3 * self.num_heads, layer),
            vector(p, "norm", self.inner, layer),
            matrix(p, "out_proj", Role.SSM_OUT, hidden, self.inner, layer),
        ]

    def state_bytes(self, tp: int) -> float:
        groups = self.n_groups if self.n_groups % tp == 0 else math.ceil(self.n_groups / tp) * tp
        conv_ch = (self.inner + 2 * groups * self.state_size) / tp
        conv = (self.conv_kernel - 1) * conv_ch * self.conv_dtype_bytes
        ssm = _per_rank(self.num_heads, tp) * self.head_dim * self.state_size * self.ssm_dtype_bytes
        return conv + ssm


@record
class ParallelHybrid(_Kind):
    """Falcon-H1: attention and a Mamba2 mixer side by side in every layer, their outputs summed. Caches both:
    the attention's KV per token and the Mamba2 state per request."""

    kind: ClassVar[str] = "parallel_hybrid"
    attention: FullAttention
    ssm: Mamba2

    def tensors(self, prefix: str, hidden: int, layer: int) -> list[Tensor]:
        return self.attention.tensors(prefix, hidden, layer) + self.ssm.tensors(prefix, hidden, layer)

    def kv_bytes_per_token(self, cache_bytes: float, tp: int) -> float:
        return self.attention.kv_bytes_per_token(cache_bytes, tp)

    def kv_bytes_per_request(self, context: int, cache_bytes: float, tp: int) -> float:
        return self.attention.kv_bytes_per_request(context, cache_bytes, tp)

    def state_bytes(self, tp: int) -> float:
        return self.ssm.state_bytes(tp)


@record
class LinearAttention(_Recurrent):
    """Plain (lightning) linear attention, MiniMax-Text-01 / M1 style: fused qkv, an output gate, a norm and o_proj.
    State: ``heads x head_dim x head_dim`` per request (vLLM ``linear_attention_state_shape``), in the model dtype."""

    kind: ClassVar[str] = "linear_attention"
    num_heads: int = checked(kind=int, gt=0)
    head_dim: int = checked(kind=int, gt=0)
    state_dtype_bytes: float = 2

    def tensors(self, prefix: str, hidden: int, layer: int) -> list[Tensor]:
        p = f"{prefix}.self_attn"
        inner = self.num_heads * self.head_dim
        return [matrix(p, "qkv_proj", Role.ATTN_QKV, 3 * inner, hidden, layer),
                matrix(p, "output_gate", Role.ATTN_OTHER, inner, hidden, layer),
                vector(p, "norm", inner, layer),
                matrix(p, "out_proj", Role.ATTN_OUTPUT, hidden, inner, layer)]

    def state_bytes(self, tp: int) -> float:
        return _per_rank(self.num_heads, tp) * self.head_dim * self.head_dim * self.state_dtype_bytes


@record
class ShortConv(_Recurrent):
    """LFM2 gated short convolution: in_proj h -> 3h (B, C, x), a depthwise conv of ``conv_kernel`` taps,
    out_proj h -> h. State: the last ``conv_kernel - 1`` inputs of the ``hidden`` channels (vLLM
    ``short_conv_state_shape``), in the model dtype."""

    kind: ClassVar[str] = "short_conv"
    hidden: int = checked(kind=int, gt=0)
    conv_kernel: int = checked(kind=int, gt=0)
    bias: bool = False
    conv_dtype_bytes: float = 2

    def tensors(self, prefix: str, hidden: int, layer: int) -> list[Tensor]:
        p = f"{prefix}.conv"
        out = [matrix(p, "in_proj", Role.SSM_IN, 3 * self.hidden, hidden, layer),
               Tensor(f"{p}.conv", Role.SSM_CONV, self.hidden, self.conv_kernel, 1, layer),
               matrix(p, "out_proj", Role.SSM_OUT, hidden, self.hidden, layer)]
        if self.bias:
            out.append(vector(p, "biases", 3 * self.hidden + self.hidden + hidden, layer))
        return out

    def state_bytes(self, tp: int) -> float:
        return (self.conv_kernel - 1) * math.ceil(self.hidden / tp) * self.conv_dtype_bytes


@record
class LinearReplacement(_Kind):
    """DeciLM (Nemotron-NAS) blocks whose attention or FFN was replaced by one hidden x hidden linear layer."""

    kind: ClassVar[str] = "linear"

    def tensors(self, prefix: str, hidden: int, layer: int) -> list[Tensor]:
        return [matrix(prefix, "linear", Role.ATTN_OUTPUT, hidden, hidden, layer)]

    def kv_bytes_per_token(self, cache_bytes: float, tp: int) -> float:
        return 0.0

    def kv_bytes_per_request(self, context: int, cache_bytes: float, tp: int) -> float:
        return 0.0

    def state_bytes(self, tp: int) -> float:
        return 0.0


Mixer = (FullAttention | SlidingWindowAttention | ChunkedLocalAttention | MLAAttention | CompressedSparseAttention
         | GatedDeltaNet | KimiDeltaAttention | Mamba2 | ShortConv | LinearAttention | ParallelHybrid | LinearReplacement)


# ------------------------------------------------------------------------------------------------ MLPs
@record
class DenseMLP(_Kind):
    """Gated (SwiGLU/GeGLU: gate, up, down) or plain (up, down; Nemotron-H relu2) feed-forward."""

    kind: ClassVar[str] = "dense"
    intermediate: int = checked(kind=int, gt=0)
    gated: bool = True
    bias: bool = False

    def tensors(self, prefix: str, hidden: int, layer: int) -> list[Tensor]:
        p = f"{prefix}.mlp"
        out = [matrix(p, "up_proj", Role.FFN_UP, self.intermediate, hidden, layer),
               matrix(p, "down_proj", Role.FFN_DOWN, hidden, self.intermediate, layer)]
        if self.gated:
            out.insert(0, matrix(p, "gate_proj", Role.FFN_GATE, self.intermediate, hidden, layer))
        if self.bias:
            out.append(vector(p, "bias", self.intermediate * (2 if self.gated else 1) + hidden, layer))
        return out

    def inactive_params(self, hidden: int) -> int:
        return 0


@record
class MoE(_Kind):
    """Mixture of experts: a router, ``num_experts`` routed experts of which ``top_k`` run per token, optional
    always-on shared experts (``shared_intermediate`` is their combined width) and optional dense MLP beside it
    (Gemma 4 26B-A4B). ``latent_size`` (Nemotron 3 Super) runs routed experts in a smaller latent space."""

    kind: ClassVar[str] = "moe"
    num_experts: int = checked(kind=int, gt=0)
    top_k: int = checked(kind=int, gt=0)
    expert_intermediate: int = checked(kind=int, gt=0)
    shared_intermediate: int = 0
    shared_gate: bool = False  # Qwen2-MoE style sigmoid gate on the shared expert
    dense_intermediate: int = 0
    gated: bool = True
    expert_bias: bool = False  # gpt-oss expert biases
    router_bias: bool = False
    latent_size: int = 0

    def tensors(self, prefix: str, hidden: int, layer: int) -> list[Tensor]:
        p = f"{prefix}.mlp"
        width = self.latent_size or hidden
        e, inter = self.num_experts, self.expert_intermediate
        out = [matrix(p, "gate", Role.ROUTER, e, hidden, layer)]
        if self.router_bias:
            out.append(vector(p, "gate.bias", e, layer))
        if self.gated:
            out.append(matrix(p, "experts.gate_proj", Role.FFN_GATE_EXPS, inter, width, layer, e))
        out += [matrix(p, "experts.up_proj", Role.FFN_UP_EXPS, inter, width, layer, e),
                matrix(p, "experts.down_proj", Role.FFN_DOWN_EXPS, width, inter, layer, e)]
        if self.expert_bias:
            out.append(vector(p, "experts.bias", e * (inter * (2 if self.gated else 1) + width), layer))
        if self.latent_size:
            out += [matrix(p, "fc1_latent_proj", Role.ATTN_OTHER, self.latent_size, hidden, layer),
                    matrix(p, "fc2_latent_proj", Role.ATTN_OTHER, hidden, self.latent_size, layer)]
        if self.shared_intermediate:
            s = self.shared_intermediate
            if self.gated:
                out.append(matrix(p, "shared_experts.gate_proj", Role.FFN_GATE_SHEXP, s, hidden, layer))
            out += [matrix(p, "shared_experts.up_proj", Role.FFN_UP_SHEXP, s, hidden, layer),
                    matrix(p, "shared_experts.down_proj", Role.FFN_DOWN_SHEXP, hidden, s, layer)]
            if self.shared_gate:
                out.append(vector(p, "shared_expert_gate", hidden, layer))
        if self.dense_intermediate:
            out += DenseMLP(intermediate=self.dense_intermediate).tensors(f"{prefix}.dense", hidden, layer)
        return out

    def routed_params(self, hidden: int) -> int:
        width = self.latent_size or hidden
        per_expert = (3 if self.gated else 2) * width * self.expert_intermediate
        if self.expert_bias:
            per_expert += self.expert_intermediate * (2 if self.gated else 1) + width
        return self.num_experts * per_expert

    def inactive_params(self, hidden: int) -> int:
        """Routed-expert parameters a token does not touch: all but ``top_k`` of ``num_experts``."""
        return self.routed_params(hidden) * (self.num_experts - self.top_k) // self.num_experts


MLP = DenseMLP | MoE | LinearReplacement


@record
class DecoderLayer(_Kind):
    mixer: Mixer | None = None
    mlp: MLP | None = None
    norms: int | None = None  # hidden-size norm vectors in the layer when not one per sub-block (Gemma: 4)

    def tensors(self, prefix: str, hidden: int, layer: int) -> list[Tensor]:
        out: list[Tensor] = []
        norms = 0
        if self.mixer is not None:
            out += self.mixer.tensors(prefix, hidden, layer)
            norms += 1
        if self.mlp is not None:
            out += self.mlp.tensors(prefix, hidden, layer) if not isinstance(self.mlp, LinearReplacement) \
                else [matrix(f"{prefix}.mlp", "linear", Role.FFN_DOWN, hidden, hidden, layer)]
            norms += 1
        if self.norms is not None:
            norms = self.norms
        if norms:
            out.append(vector(prefix, "layernorms", norms * hidden, layer))
        return out

    def inactive_params(self, hidden: int) -> int:
        return self.mlp.inactive_params(hidden) if isinstance(self.mlp, MoE) else 0
