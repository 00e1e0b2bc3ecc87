"""The layers of an encoder-decoder (Whisper, M2M-100 / NLLB, BART, Marian, SeamlessM4T's text model), as
transformers' ``modeling_whisper.py`` / ``modeling_m2m_100.py`` / ``modeling_bart.py`` build them.

An encoder layer runs once per request over the encoder's input and caches nothing. A decoder layer attends to
its own tokens (keys and values cached per token, as any decoder) and to the encoder's output: the cross-attention
keys and values are computed once per request from the encoder's tokens and stay fixed while the decoder runs, a
state per request that does not grow with the decoder's context (vLLM's ``CrossAttentionSpec``).
"""

from __future__ import annotations

from typing import ClassVar

from ..cache_spec import CacheSpec
from ..record import checked, record
from ..tensors import Role, Tensor, matrix, vector
from .attention import FullAttention
from .base import CachesNothing, Kind
from .mlp import DenseMLP
from .rnn import CrossAttention


@record
class EncoderCrossAttention(CrossAttention):
    """A decoder layer's ``encoder_attn``: q/k/v/out projections with biases (Whisper's k_proj has none) over the
    ``encoder_tokens`` outputs of the encoder, whose keys and values stay fixed per request."""

    bias: bool = True
    k_bias: bool = True

    def tensors(self, prefix: str, hidden: int, layer: int) -> list[Tensor]:
        p = f"{prefix}.encoder_attn"
        q, kv = self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim
        out = [matrix(p, "q_proj", Role.ATTN_Q, q, hidden, layer), matrix(p, "k_proj", Role.ATTN_K, kv, hidden, layer),
               matrix(p, "v_proj", Role.ATTN_V, kv, hidden, layer),
               matrix(p, "out_proj", Role.ATTN_OUTPUT, hidden, q, layer)]
        if self.bias:
            out.append(vector(p, "biases", q + (kv if self.k_bias else 0) + kv + hidden, layer))
        return out


@record
class SelfAndCrossAttention(Kind):
    """An encoder-decoder's decoder layer mixer: causal self-attention (K and V cached per token) followed by
    attention over the encoder's output (its K and V fixed per request). Caches both."""

    kind: ClassVar[str] = "self_and_cross_attention"
    attends: ClassVar[bool] = True
    title: ClassVar[str | None] = "decoder self- and cross-attention (encoder-decoder)"
    attention: FullAttention
    cross: EncoderCrossAttention

    def tensors(self, prefix: str, hidden: int, layer: int) -> list[Tensor]:
        return self.attention.tensors(prefix, hidden, layer) + self.cross.tensors(prefix, hidden, layer)

    def kv_bytes_per_token(self, cache_bytes: float, tp: int) -> float:
        return self.attention.kv_bytes_per_token(cache_bytes, tp)

    def kv_bytes_per_request(self, context: int, cache_bytes: float, tp: int) -> float:
        return self.attention.kv_bytes_per_request(context, cache_bytes, tp)

    def state_bytes(self, tp: int) -> float:
        return self.cross.state_bytes(tp)

    def cache_specs(self, cache_bytes: float, tp: int, context: int, state_f32: bool = False) -> list[CacheSpec]:
        """Both: the self-attention's K and V per token and the cross-attention's encoder K and V per request."""
        return (self.attention.cache_specs(cache_bytes, tp, context, state_f32)
                + self.cross.cache_specs(cache_bytes, tp, context, state_f32))


@record
class EncoderLayer(CachesNothing):
    """One layer of the encoder: bidirectional self-attention and a two-matrix MLP (fc1, fc2) with biases, each
    behind a LayerNorm with weight and bias. Runs once per request; caches nothing."""

    kind: ClassVar[str] = "encoder"
    attention: FullAttention
    mlp: DenseMLP
    norm_vectors: int = checked(4, kind=int, ge=0)  # two LayerNorms, weight and bias each

    def tensors(self, prefix: str, hidden: int, layer: int | None) -> list[Tensor]:
        out = self.attention.tensors(prefix, hidden, layer) + self.mlp.tensors(prefix, hidden, layer)  # type: ignore[arg-type]
        if self.norm_vectors:
            out.append(vector(prefix, "layernorms", self.norm_vectors * hidden, layer))
        return out
