"""A decoder layer: a mixer (attention, linear attention or SSM; or none) and an MLP (or none)."""

from __future__ import annotations

from ..record import record
from ..tensors import Role, Tensor, matrix, vector
from .attention import (
    ChunkedLocalAttention,
    CompressedSparseAttention,
    FullAttention,
    MLAAttention,
    SlidingWindowAttention,
)
from .base import Kind
from .encoder_decoder import SelfAndCrossAttention
from .mlp import MLP, LinearReplacement, MoE
from .recurrent import GatedDeltaNet, KimiDeltaAttention, LinearAttention, Mamba2, ParallelHybrid, ShortConv
from .rnn import MLSTM, CrossAttention, Mamba, RWKVTimeMix

Mixer = (FullAttention | SlidingWindowAttention | ChunkedLocalAttention | MLAAttention | CompressedSparseAttention
         | GatedDeltaNet | KimiDeltaAttention | Mamba2 | ShortConv | LinearAttention | ParallelHybrid | LinearReplacement
         | RWKVTimeMix | Mamba | MLSTM | CrossAttention | SelfAndCrossAttention)


@record
class DecoderLayer(Kind):
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
