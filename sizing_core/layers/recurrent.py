"""Recurrent mixers with a fixed state per request: Gated DeltaNet, Kimi Delta Attention, Mamba2, linear
attention, short convolutions, and the parallel attention + Mamba2 hybrid."""

from __future__ import annotations

import math
from typing import ClassVar

from ..cache_spec import CacheSpec, FullAttentionSpec, StateSpec
from ..record import checked, record
from ..tensors import Role, Tensor, matrix, vector
from .attention import FullAttention
from .base import Kind, per_rank


@record
class Recurrent(Kind):
    """Linear-attention / SSM layers: a fixed state per request, nothing that grows with context."""

    def kv_bytes_per_token(self, cache_bytes: float, tp: int) -> float:
        return 0.0

    def kv_bytes_per_request(self, context: int, cache_bytes: float, tp: int) -> float:
        return 0.0


@record
class GatedDeltaNet(Recurrent):
    """Qwen3-Next / Qwen3.5 linear attention. State: conv ``(K-1) x (2*Hk*dk + Hv*dv)`` in ``conv_dtype_bytes``
    plus recurrent ``Hv x dv x dk`` in ``ssm_dtype_bytes`` (vLLM ``mamba_utils.gated_delta_net_state_shape``)."""

    kind: ClassVar[str] = "gated_deltanet"
    title: ClassVar[str | None] = "Gated DeltaNet"
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
        ssm = per_rank(self.num_v_heads, tp) * self.v_head_dim * self.k_head_dim * self.ssm_dtype_bytes
        return conv + ssm


@record
class KimiDeltaAttention(Recurrent):
    """Kimi Delta Attention (Kimi Linear). State: three short convs ``(K-1) x 3*H*d`` in ``conv_dtype_bytes``
    plus recurrent ``H x d x d`` always in float32 (vLLM ``kda_state_dtype``)."""

    kind: ClassVar[str] = "kimi_delta_attention"
    title: ClassVar[str | None] = "Kimi Delta Attention"
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
        heads = per_rank(self.num_heads, tp)
        conv = (self.conv_kernel - 1) * 3 * heads * self.head_dim * self.conv_dtype_bytes
        return conv + heads * self.head_dim * self.head_dim * 4


@record
class Mamba2(Recurrent):
    """Mamba2 mixer (Nemotron-H). State: conv ``(K-1) x (I + 2*G*N)`` plus SSM ``nheads x head_dim x N``."""

    kind: ClassVar[str] = "mamba2"
    title: ClassVar[str | None] = "Mamba2"
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
        ssm = per_rank(self.num_heads, tp) * self.head_dim * self.state_size * self.ssm_dtype_bytes
        return conv + ssm


@record
class ParallelHybrid(Kind):
    """Falcon-H1: attention and a Mamba2 mixer side by side in every layer, their outputs summed. Caches both:
    the attention's KV per token and the Mamba2 state per request."""

    kind: ClassVar[str] = "parallel_hybrid"
    attends: ClassVar[bool] = True
    title: ClassVar[str | None] = "attention + Mamba2"
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

    def cache_specs(self, cache_bytes: float, tp: int, context: int, state_f32: bool = False) -> list[CacheSpec]:
        """Both: the attention's K and V per token and the Mamba2 state per request."""
        return [FullAttentionSpec(token_bytes=self.attention.kv_bytes_per_token(cache_bytes, tp)),
                StateSpec(state_bytes=self.ssm.kept_state_bytes(tp, state_f32))]


@record
class LinearAttention(Recurrent):
    """Plain (lightning) linear attention, MiniMax-Text-01 / M1 style: fused qkv, an output gate, a norm and o_proj.
    State: ``heads x head_dim x head_dim`` per request (vLLM ``linear_attention_state_shape``), in the model dtype."""

    kind: ClassVar[str] = "linear_attention"
    title: ClassVar[str | None] = "linear attention"
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
        return per_rank(self.num_heads, tp) * self.head_dim * self.head_dim * self.state_dtype_bytes


@record
class ShortConv(Recurrent):
    """LFM2 gated short convolution: in_proj h -> 3h (B, C, x), a depthwise conv of ``conv_kernel`` taps,
    out_proj h -> h. State: the last ``conv_kernel - 1`` inputs of the ``hidden`` channels (vLLM
    ``short_conv_state_shape``), in the model dtype."""

    kind: ClassVar[str] = "short_conv"
    title: ClassVar[str | None] = "short convolution"
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
