"""A model described as groups of tensors, the unit that weight formats are applied to.

Weight formats are chosen per tensor (GGUF mixes promote ``ffn_down``/``attn_v``/``output``; FP8 and NVFP4
checkpoints keep listed modules in BF16), so sizing works on tensor groups rather than one global
bits-per-weight. A group is one weight matrix of one layer (``count`` > 1 for a stack of routed experts).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Role(StrEnum):
    """What a tensor does; the names follow llama.cpp's GGUF tensor names, which its quantization rules use."""

    TOKEN_EMBD = "token_embd"
    OUTPUT = "output"
    ATTN_Q = "attn_q"
    ATTN_K = "attn_k"
    ATTN_V = "attn_v"
    ATTN_QKV = "attn_qkv"
    ATTN_OUTPUT = "attn_output"
    ATTN_Q_A = "attn_q_a"
    ATTN_Q_B = "attn_q_b"
    ATTN_KV_A = "attn_kv_a_mqa"
    ATTN_KV_B = "attn_kv_b"
    ATTN_OTHER = "attn_other"  # indexer, compressor, gates of linear attention: quantized at the base type
    FFN_GATE = "ffn_gate"
    FFN_UP = "ffn_up"
    FFN_DOWN = "ffn_down"
    FFN_GATE_EXPS = "ffn_gate_exps"
    FFN_UP_EXPS = "ffn_up_exps"
    FFN_DOWN_EXPS = "ffn_down_exps"
    FFN_GATE_SHEXP = "ffn_gate_shexp"
    FFN_UP_SHEXP = "ffn_up_shexp"
    FFN_DOWN_SHEXP = "ffn_down_shexp"
    ROUTER = "ffn_gate_inp"
    SSM_IN = "ssm_in"
    SSM_OUT = "ssm_out"
    SSM_CONV = "ssm_conv1d"
    NORM = "norm"  # 1-D tensors: norms, biases, A_log, dt_bias, sinks; never quantized
    POSITION = "position_embd"  # a learned position table (GPT-2, OPT): never quantized, llama.cpp keeps it F16
    VISION = "vision"  # vision tower and projector (and a Whisper-style audio encoder, AUDIO below)
    AUDIO = "audio"


#: Roles that are linear-layer weight matrices, i.e. what FP8/INT8/NVFP4/MXFP4/AWQ quantize.
LINEAR_ROLES = frozenset(
    {
        Role.ATTN_Q, Role.ATTN_K, Role.ATTN_V, Role.ATTN_QKV, Role.ATTN_OUTPUT, Role.ATTN_Q_A, Role.ATTN_Q_B,
        Role.ATTN_KV_A, Role.ATTN_KV_B, Role.ATTN_OTHER, Role.FFN_GATE, Role.FFN_UP, Role.FFN_DOWN,
        Role.FFN_GATE_EXPS, Role.FFN_UP_EXPS, Role.FFN_DOWN_EXPS, Role.FFN_GATE_SHEXP, Role.FFN_UP_SHEXP,
        Role.FFN_DOWN_SHEXP, Role.SSM_IN, Role.SSM_OUT,
    }
)
EXPERT_ROLES = frozenset({Role.FFN_GATE_EXPS, Role.FFN_UP_EXPS, Role.FFN_DOWN_EXPS})
#: Multimodal towers: counted apart, 16-bit in every format we quantize ourselves (llama.cpp's mmproj file, vLLM
#: leaves them unquantized); in the native format only the checkpoint's own scheme decides.
TOWER_ROLES = frozenset({Role.VISION, Role.AUDIO})


@dataclass(frozen=True, slots=True)
class Tensor:
    """One weight group. ``name`` is the Hugging Face module path (used to match quantization exclusions)."""

    name: str
    role: Role
    rows: int  # output features
    cols: int  # input features: the dimension that quantization blocks run along
    count: int = 1  # routed experts stacked in this group
    layer: int | None = None

    @property
    def numel(self) -> int:
        return self.rows * self.cols * self.count

    @property
    def is_linear(self) -> bool:
        return self.role in LINEAR_ROLES

    @property
    def is_routed_expert(self) -> bool:
        return self.role in EXPERT_ROLES

    @property
    def is_tower(self) -> bool:
        return self.role in TOWER_ROLES


def matrix(prefix: str, name: str, role: Role, out_features: int, in_features: int, layer: int | None,
           count: int = 1) -> Tensor:
    return Tensor(f"{prefix}.{name}", role, out_features, in_features, count, layer)


def vector(prefix: str, name: str, size: int, layer: int | None) -> Tensor:
    return Tensor(f"{prefix}.{name}", Role.NORM, size, 1, 1, layer)
