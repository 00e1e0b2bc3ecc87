"""Mixers of models without attention, each with a constant state per sequence: RWKV time-mix (versions 4 to 7),
Mamba (v1) selective SSM, xLSTM's mLSTM; and Mllama's cross-attention, whose image keys and values are also fixed
per request. Shapes restated from the modelling files named in each class; states as the engines keep them.
"""

from __future__ import annotations

import math
from typing import ClassVar

from ..cache_spec import CacheSpec, CrossAttentionSpec
from ..record import checked, record
from ..tensors import Role, Tensor, matrix, vector
from .base import per_rank
from .recurrent import Recurrent


def rwkv7_low_rank(hidden: int, factor: float, power: float) -> int:
    """RWKV-LM v7's default LoRA widths: max(32, round(factor * hidden^power / 32) * 32)."""
    return max(32, round(factor * hidden ** power / 32) * 32)


@record
class RWKVTimeMix(Recurrent):
    """RWKV time-mix of ``version`` 4 (transformers modeling_rwkv.py), 5 (RWKV-5 World remote code), 6 (RWKV-LM
    ``RWKV_Tmix_x060``) or 7 (``RWKV_Tmix_x070``), plus the channel-mix's receptance and mixing vectors (its key
    and value are the layer's two-matrix MLP). State per sequence and layer: RWKV-4 keeps 2 token shifts of
    ``hidden`` and 3 vectors of ``attention_hidden`` (numerator, denominator, max); RWKV-5/6/7 keep 2 token shifts
    and one ``heads x head_size x head_size`` matrix; all in float32 (transformers' RWKV state, fla's kernels)."""

    kind: ClassVar[str] = "rwkv"
    title: ClassVar[str | None] = "RWKV time-mix"
    version: int = checked(kind=int, ge=4, le=7)
    hidden: int = checked(kind=int, gt=0)
    attention_hidden: int = checked(kind=int, gt=0)
    head_size: int = checked(kind=int, gt=0)
    mix_lora: int = 32  # v6 token-shift LoRA width
    decay_lora: int = 64  # v6/v7 decay LoRA width
    a_lora: int = 64  # v7 in-context learning rate LoRA
    v_lora: int = 32  # v7 value residual LoRA (not on the first layer)
    gate_lora: int = 128  # v7 output gate LoRA
    first_layer: bool = False
    state_dtype_bytes: float = 4

    @property
    def heads(self) -> int:
        return self.attention_hidden // self.head_size

    def tensors(self, prefix: str, hidden: int, layer: int) -> list[Tensor]:
        p, a, h, v = f"{prefix}.attention", self.attention_hidden, hidden, self.version
        names = ("receptance", "key", "value") + (("gate",) if v in (5, 6) else ())
        # llama.cpp's RWKV tensors (time_mix_*) match none of its promotion rules: base type, as ATTN_OTHER
        out = [matrix(p, name, Role.ATTN_OTHER, a, h, layer) for name in names]
        out.append(matrix(p, "output", Role.ATTN_OTHER, h, a, layer))
        if v == 4:
            out.append(vector(p, "time_mix_decay_first", 3 * h + 2 * a, layer))
        elif v == 5:
            out += [vector(p, "time_mix", 4 * h, layer), vector(p, "time_decay_faaaa", 2 * a, layer)]
        elif v == 6:
            r, d = self.mix_lora, self.decay_lora
            out += [vector(p, "time_maa", 6 * h + 2 * a, layer),
                    matrix(p, "time_maa_w1", Role.ATTN_OTHER, 5 * r, h, layer),
                    matrix(p, "time_maa_w2", Role.ATTN_OTHER, 5 * h, r, layer),
                    matrix(p, "time_decay_w1", Role.ATTN_OTHER, d, h, layer),
                    matrix(p, "time_decay_w2", Role.ATTN_OTHER, a, d, layer)]
        else:
            loras = [("w", self.decay_lora), ("a", self.a_lora), ("g", self.gate_lora)]
            if not self.first_layer:
                loras.append(("v", self.v_lora))
            for name, r in loras:
                out += [matrix(p, f"{name}1", Role.ATTN_OTHER, r, h, layer),
                        matrix(p, f"{name}2", Role.ATTN_OTHER, a, r, layer)]
            # x_r/w/k/v/a/g; w0, a0 (and v0 after the first layer); k_k, k_a, r_k
            out.append(vector(p, "x_and_biases", 6 * h + 2 * a + (a if not self.first_layer else 0) + 3 * a, layer))
        if v >= 5:
            out.append(vector(p, "ln_x", 2 * a, layer))
        f = f"{prefix}.feed_forward"
        if v < 7:
            out += [matrix(f, "receptance", Role.ATTN_OTHER, h, h, layer), vector(f, "time_mix", 2 * h, layer)]
        else:
            out.append(vector(f, "x_k", h, layer))
        return out

    def state_bytes(self, tp: int) -> float:
        if self.version == 4:
            return (2 * math.ceil(self.hidden / tp) + 3 * math.ceil(self.attention_hidden / tp)) * self.state_dtype_bytes
        shifts = 2 * self.hidden  # token shift of time-mix and channel-mix (replicated)
        return (shifts + per_rank(self.heads, tp) * self.head_size * self.head_size) * self.state_dtype_bytes


@record
class Mamba(Recurrent):
    """Mamba (v1) selective SSM block (transformers modeling_mamba.py ``MambaMixer``): in_proj h -> 2I, depthwise
    conv of ``conv_kernel`` taps, x_proj I -> (R + 2N), dt_proj R -> I, A_log (I x N), D, out_proj I -> h.
    State per sequence: conv ``(K-1) x I`` and SSM ``I x N`` (vLLM ``mamba1_state_shape``), in ``dtype_bytes``."""

    kind: ClassVar[str] = "mamba"
    title: ClassVar[str | None] = "Mamba"
    intermediate: int = checked(kind=int, gt=0)
    state_size: int = checked(kind=int, gt=0)
    conv_kernel: int = checked(kind=int, gt=0)
    dt_rank: int = checked(kind=int, gt=0)
    bias: bool = False
    conv_bias: bool = True
    inner_norms: bool = False  # Jamba: RMSNorm weights on dt, B and C (dt_rank + 2 N)
    conv_dtype_bytes: float = 2
    ssm_dtype_bytes: float = 2

    def tensors(self, prefix: str, hidden: int, layer: int) -> list[Tensor]:
        p, i, n = f"{prefix}.mixer", self.intermediate, self.state_size
        out = [matrix(p, "in_proj", Role.SSM_IN, 2 * i, hidden, layer),
               Tensor(f"{p}.conv1d", Role.SSM_CONV, i, self.conv_kernel, 1, layer),
               matrix(p, "x_proj", Role.ATTN_OTHER, self.dt_rank + 2 * n, i, layer),
               matrix(p, "dt_proj", Role.ATTN_OTHER, i, self.dt_rank, layer),
               vector(p, "A_log_D_dt_bias", i * n + 2 * i + (i if self.conv_bias else 0)
                      + ((2 * i + hidden) if self.bias else 0)
                      + ((self.dt_rank + 2 * n) if self.inner_norms else 0), layer),
               matrix(p, "out_proj", Role.SSM_OUT, hidden, i, layer)]
        return out

    def state_bytes(self, tp: int) -> float:
        channels = math.ceil(self.intermediate / tp)
        return (self.conv_kernel - 1) * channels * self.conv_dtype_bytes + channels * self.state_size * self.ssm_dtype_bytes


@record
class MLSTM(Recurrent):
    """xLSTM's mLSTM layer (transformers modeling_xlstm.py ``xLSTMLayer``, weight_mode single): q/k of ``qk_dim``,
    v and output gate of ``v_dim``, input and forget gates per head (with bias), a multi-head norm, out_proj.
    State per sequence: per head the matrix memory ``dqk x dv``, the normaliser ``dqk`` and the max ``1``, float32
    (``inference_state_dtype``)."""

    kind: ClassVar[str] = "mlstm"
    title: ClassVar[str | None] = "mLSTM"
    num_heads: int = checked(kind=int, gt=0)
    qk_dim: int = checked(kind=int, gt=0)
    v_dim: int = checked(kind=int, gt=0)
    bias: bool = False
    state_dtype_bytes: float = 4

    def tensors(self, prefix: str, hidden: int, layer: int) -> list[Tensor]:
        p, nh = f"{prefix}.mlstm_layer", self.num_heads
        out = [matrix(p, "q", Role.ATTN_Q, self.qk_dim, hidden, layer),
               matrix(p, "k", Role.ATTN_K, self.qk_dim, hidden, layer),
               matrix(p, "v", Role.ATTN_V, self.v_dim, hidden, layer),
               matrix(p, "ogate_preact", Role.ATTN_OTHER, self.v_dim, hidden, layer),
               matrix(p, "ifgate_preact", Role.ATTN_OTHER, 2 * nh, hidden, layer),
               vector(p, "gate_biases_multihead_norm", 2 * nh + self.v_dim
                      + ((2 * self.qk_dim + 3 * self.v_dim + hidden) if self.bias else 0), layer),
               matrix(p, "out_proj", Role.ATTN_OUTPUT, hidden, self.v_dim, layer)]
        return out

    def state_bytes(self, tp: int) -> float:
        heads = per_rank(self.num_heads, tp)
        dqk, dv = self.qk_dim // self.num_heads, self.v_dim // self.num_heads
        return heads * (dqk * dv + dqk + 1) * self.state_dtype_bytes


@record
class CrossAttention(Recurrent):
    """Mllama's cross-attention layers (transformers modeling_mllama.py ``MllamaTextCrossAttention``): q/k/v/o,
    per-head q/k RMSNorm and two tanh gates. They attend to the image tokens, not the text: their keys and values
    are computed once per request from ``encoder_tokens`` vision states (tiles x patches) and stay fixed, a state
    that does not grow with context."""

    kind: ClassVar[str] = "cross_attention"
    title: ClassVar[str | None] = "cross-attention"
    num_heads: int = checked(kind=int, gt=0)
    num_kv_heads: int = checked(kind=int, gt=0)
    head_dim: int = checked(kind=int, gt=0)
    encoder_tokens: int = checked(kind=int, gt=0)  # the encoder outputs it attends to (Mllama: image tokens)
    cache_dtype_bytes: float = 2

    def tensors(self, prefix: str, hidden: int, layer: int) -> list[Tensor]:
        p = f"{prefix}.cross_attn"
        q, kv = self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim
        return [matrix(p, "q_proj", Role.ATTN_Q, q, hidden, layer), matrix(p, "k_proj", Role.ATTN_K, kv, hidden, layer),
                matrix(p, "v_proj", Role.ATTN_V, kv, hidden, layer),
                matrix(p, "o_proj", Role.ATTN_OUTPUT, hidden, q, layer),
                vector(p, "qk_norm_gates", 2 * self.head_dim + 2, layer)]

    def state_bytes(self, tp: int) -> float:
        return self.encoder_tokens * per_rank(self.num_kv_heads, tp) * 2 * self.head_dim * self.cache_dtype_bytes

    def cache_specs(self, cache_bytes: float, tp: int, context: int, state_f32: bool = False) -> list[CacheSpec]:
        return [CrossAttentionSpec(state_bytes=self.kept_state_bytes(tp, state_f32))] if self.state_bytes(tp) else []
