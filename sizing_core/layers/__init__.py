"""One small class per layer kind, each knowing its own parameters, KV bytes per token and fixed state.

The shape follows vLLM's ``vllm/v1/kv_cache_interface.py`` (one spec class per attention kind). A decoder layer
is a *mixer* (attention, linear attention or SSM; absent in MLP-only layers of Nemotron-H / DeciLM) and an *MLP*
(dense, mixture of experts, or absent). Formulas are restated from ``docs/sizing.md`` (after FORMULAS.md).

Conventions for the cache methods, all per layer, per request, on one GPU of a tensor-parallel group of ``tp``:
``kv_bytes_per_token`` is the part that grows with context (0 for capped and recurrent kinds);
``kv_bytes_per_request`` is what a request of ``context`` tokens holds, caps applied;
``state_bytes`` is the fixed recurrent state, independent of context.
"""

from .attention import (
    ChunkedLocalAttention,
    CompressedSparseAttention,
    FullAttention,
    MLAAttention,
    SlidingWindowAttention,
)
from .base import Kind, per_rank
from .decoder import DecoderLayer, Mixer
from .encoder_decoder import EncoderCrossAttention, EncoderLayer, SelfAndCrossAttention
from .mlp import MLP, DenseMLP, LinearReplacement, MoE
from .recurrent import (
    GatedDeltaNet,
    KimiDeltaAttention,
    LinearAttention,
    Mamba2,
    ParallelHybrid,
    Recurrent,
    ShortConv,
)
from .rnn import MLSTM, CrossAttention, Mamba, RWKVTimeMix

__all__ = [
    "MLSTM",
    "ChunkedLocalAttention",
    "CrossAttention",
    "CompressedSparseAttention",
    "DecoderLayer",
    "DenseMLP",
    "EncoderCrossAttention",
    "EncoderLayer",
    "FullAttention",
    "GatedDeltaNet",
    "KimiDeltaAttention",
    "Kind",
    "LinearAttention",
    "LinearReplacement",
    "MLAAttention",
    "MLP",
    "Mamba2",
    "Mixer",
    "MoE",
    "Mamba",
    "RWKVTimeMix",
    "ParallelHybrid",
    "Recurrent",
    "SelfAndCrossAttention",
    "ShortConv",
    "SlidingWindowAttention",
    "per_rank",
]
