"""Fine-tuning memory per GPU: QLoRA (4-bit base), LoRA (16-bit base), full fine-tuning (BF16 + AdamW).

Assumptions, stated so they can be argued with (``docs/placement.md`` compares them with seed 000 and
published measurements):
- QLoRA base: linear weights in NF4 with double quantization (4.127 bits); embeddings, LM head and norms BF16.
- LoRA adapters of rank ``rank`` on every attention projection and dense/shared MLP matrix (not on routed
  experts); each adapter parameter costs 16 bytes: BF16 weight and gradient, FP32 master copy, two AdamW moments.
- Full: 16 bytes per parameter (BF16 weight and gradient, FP32 master, two FP32 AdamW moments).
- Activations with gradient checkpointing: each layer's input kept (2 x tokens x hidden bytes), one layer
  recomputed at a time (~34 x tokens x hidden bytes, Korthikanti et al. 2022 with FlashAttention), plus FP32
  logits for the loss (4 x tokens x vocab bytes).
- ``gpus`` > 1 shards weights, gradients and optimizer state evenly (FSDP / ZeRO-3); activations are per GPU.
"""

from __future__ import annotations

from typing import Literal

from .architecture import Architecture
from .gpus import GPU
from .record import CamelRecord, record
from .tensors import EXPERT_ROLES, Role
from .units import GIB

Method = Literal["qlora", "lora", "full"]
NF4_DOUBLE_QUANT_BITS = 4 + 8 / 64 + 32 / (64 * 256)  # 4-bit codes, 8-bit scale per 64, fp32 scale per 256 scales
_ADAPTED = {Role.ATTN_Q, Role.ATTN_K, Role.ATTN_V, Role.ATTN_QKV, Role.ATTN_OUTPUT, Role.ATTN_Q_A, Role.ATTN_Q_B,
            Role.ATTN_KV_A, Role.ATTN_KV_B, Role.FFN_GATE, Role.FFN_UP, Role.FFN_DOWN, Role.FFN_GATE_SHEXP,
            Role.FFN_UP_SHEXP, Role.FFN_DOWN_SHEXP}


@record
class FineTuneMemory(CamelRecord):
    method: Method
    gpus: int
    weights_gib: float
    adapters_and_optimizer_gib: float  # trainable parameters' weights, gradients and optimizer states
    activations_gib: float
    total_gib: float  # per GPU
    trainable_parameters: int
    assumptions: str


def finetune_memory(arch: Architecture, method: Method, seq_len: int = 2048, batch: int = 1, rank: int = 16,
                    gpus: int = 1) -> FineTuneMemory:
    if method not in ("qlora", "lora", "full"):
        raise ValueError(f"unknown fine-tuning method {method!r} (qlora, lora, full)")
    if min(seq_len, batch, rank, gpus) < 1:
        raise ValueError("seq_len, batch, rank and gpus must be >= 1")
    weights = 0.0
    adapters = 0
    for t in arch.tensors:
        if method == "qlora" and t.is_linear:
            weights += t.numel * NF4_DOUBLE_QUANT_BITS / 8
        else:
            weights += t.numel * 2
        if t.role in _ADAPTED and t.role not in EXPERT_ROLES:
            adapters += rank * (t.rows + t.cols)
    params = sum(t.numel for t in arch.tensors)
    trainable = params if method == "full" else adapters
    optimizer = (params * 14 if method == "full" else adapters * 16)  # full: +grad 2 + master 4 + moments 8
    tokens = seq_len * batch
    h = arch.hidden_size
    activations = arch.num_layers * 2 * tokens * h + 34 * tokens * h + 4 * tokens * arch.vocab_size
    per_gpu = (weights + optimizer) / gpus + activations
    return FineTuneMemory(
        method=method, gpus=gpus, weights_gib=weights / gpus / GIB, adapters_and_optimizer_gib=optimizer / gpus / GIB,
        activations_gib=activations / GIB, total_gib=per_gpu / GIB, trainable_parameters=trainable,
        assumptions=f"seq_len {seq_len}, batch {batch}, LoRA rank {rank}, gradient checkpointing, "
                    f"{'FSDP over ' + str(gpus) + ' GPUs' if gpus > 1 else 'one GPU'}",
    )


#: what a training process cannot use of a GPU's memory: the CUDA context and the caching allocator's slack (stated,
#: as the other assumptions; PyTorch's CUDA context alone takes ~0.3-0.5 GiB)
TRAINING_RESERVE_GIB = 1.0


def usable_for_training_gib(gpu: GPU) -> float:
    """A GPU's memory a fine-tuning run can fill: what it addresses minus :data:`TRAINING_RESERVE_GIB`."""
    return gpu.memory_bytes / GIB - TRAINING_RESERVE_GIB


def holds(memory: FineTuneMemory, gpu: GPU) -> bool:
    """Whether each of ``memory.gpus`` x ``gpu`` holds the run: its per-GPU total within the usable memory."""
    return memory.total_gib <= usable_for_training_gib(gpu)


def fewest_gpus_to_finetune(arch: Architecture, method: Method, gpu: GPU, seq_len: int = 2048, batch: int = 1,
                            rank: int = 16) -> tuple[int | None, FineTuneMemory]:
    """The fewest ``gpu`` of one machine (FSDP shards within it, up to :attr:`GPU.node_size`) whose memory holds a
    ``method`` run, and its memory there; (None, the memory on a full machine) when none does (activations are
    per GPU: sharding cannot make them fit)."""
    for n in range(1, gpu.node_size + 1):
        memory = finetune_memory(arch, method, seq_len, batch, rank, gpus=n)
        if holds(memory, gpu):
            return n, memory
    return None, memory
