"""The measured start-up facts the engine classes (``engines/``) are built from: what CUDA reports, each engine's
default settings by GPU and version, the profile run's forward-pass peak, non-torch and CUDA-graph memory, MXFP4
repacking, and the start-up record (:class:`EngineStartup`) every engine answers with. The KV pool left over is
paged per engine from the layers' cache specs (``kv_layout``).

vLLM V1 (``vllm/v1/worker/gpu_worker.py: determine_available_memory``, ``gpu_model_runner.profile_run``; the notes
and every figure's source are in ``docs/calibration.md``)::

    KV pool = utilisation x total - weights - activation peak - non-torch increase [- CUDA-graph estimate, >= 0.21]

- ``total`` is what CUDA reports (``cudaMemGetInfo``): on NVIDIA cards ~0.46 GiB below nvidia-smi's total
  (H100 79.19 of 79.65 GiB, RTX 3090 23.58 of 24.0, RTX 5090 31.4 of 31.84, L40S 44.42 of 44.99).
- the activation peak is the larger of one forward pass of ``max_num_batched_tokens`` tokens (hidden-sized buffers,
  the widest MLP or fused-MoE intermediate over TP) and the sampler warm-up: ``min(max_num_batched_tokens,
  max_num_seqs)`` rows of the whole vocabulary in float32, sorted (fp32 values + int64 indices), soft-maxed and
  penalised, :data:`SAMPLER_BYTES` per element (fitted). Defaults by version and GPU: since 0.9 a GPU of >= 70 GiB
  whose name does not contain "a100" gets 8,192 tokens and 1,024 sequences (API server), any other 2,048 and 256;
  0.8.x 256 sequences (8,192 tokens only on H100/H200); V0 profiled ``max(max_model_len, 2048)`` tokens.
- non-torch memory (NCCL and custom all-reduce buffers, cuBLAS workspaces) grows with TP.

SGLang (``model_runner.profile_max_num_token``): ``pool = free after weights - free at start x (1 -
mem_fraction_static)``, i.e. ``mem_fraction_static x (total - CUDA context - non-torch) - weights``; the default
fraction follows the GPU's memory (``server_args``: reserved = 512 MB + 1.5 x chunked prefill + 2 x CUDA-graph
batch + TP x PP / 8 GB, at least 10 GB on GPUs over 60 GB).

llama.cpp: per device the model buffer, the KV and recurrent buffers of ``n_ctx`` cells, and the compute buffer
(``n_ubatch`` rows of logits and activations in float32).
"""

from __future__ import annotations

import math
import re

from ..architecture import Architecture
from ..gpus import GPU
from ..layers import MoE
from ..memo import model_memo
from ..record import CamelRecord, alias, record
from ..units import GIB

CURRENT_VLLM = (0, 28)  # the newest vLLM the calibration set covers; the default version
CURRENT_SGLANG = (0, 5)
#: NVIDIA GPUs: memory nvidia-smi shows but cudaMemGetInfo's total does not (driver/firmware reservation)
CUDA_RESERVED_GIB = 0.46
#: CUDA context, outside vLLM's budget (>= 0.10) but inside what SGLang sees as "free at start"
CUDA_CONTEXT_GIB = 0.5
#: non-torch memory a rank adds during start-up: NCCL/custom all-reduce buffers and cuBLAS workspaces
NON_TORCH_GIB = 0.15
NON_TORCH_PER_TP_GIB = 0.15
#: CUDA-graph memory (0.09-0.64 GiB measured on 24-32 GB cards, 2.04 GiB on 4 x H100): outside the KV pool in every
#: logged start-up of the set ("Current kv cache memory in use" = budget - weights - activation - non-torch), so it
#: only has to fit in the 1 - utilisation head-room
CUDA_GRAPH_GIB = 0.25
#: sampler warm-up bytes per (row x vocabulary) element: fp32 logits, sorted fp32 values + int64 indices, softmax,
#: penalty counts. Read off the logs: V0 and V1 up to 0.11 (2024-2025) 35-41 B (a full sort); the 2026 logs 26-28 B
#: (a lighter top-k/top-p path). Where between 0.11 and the 2026 releases it changed is not known: taken at 0.15.
SAMPLER_BYTES = 38.0
SAMPLER_BYTES_2026 = 27.0
SAMPLER_CHANGE = (0, 15)
#: forward pass: hidden-sized bf16 buffers alive per token besides the MLP intermediates (input, residual, norm
#: output). 3 reproduces vLLM V0's profiled peaks of Llama-3.1-8B at 20,000 and 29,000 tokens (2.07 / 2.99 GiB).
FORWARD_HIDDEN_BUFFERS = 3
#: llama.cpp compute buffer: float32 values per ubatch row besides the logits, in units of the hidden size
LLAMACPP_COMPUTE_HIDDEN = 16
LLAMACPP_CONTEXT_GIB = 0.3


def parse_version(text: str | None) -> tuple[int, int] | None:
    """``"0.14.1"`` -> (0, 14); ``"V0"`` -> (0, 6); None or unparseable -> None (the current version)."""
    if not text:
        return None
    if re.match(r"^\s*v0\b", text, re.I):
        return (0, 6)
    m = re.search(r"(\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def cuda_total_bytes(gpu: GPU) -> float:
    """The total a framework sees: NVIDIA discrete cards report ~0.46 GiB less than nvidia-smi (see module doc)."""
    total = gpu.memory_bytes
    if gpu.is_nvidia and gpu.kind not in ("unified", "apple"):
        total -= CUDA_RESERVED_GIB * GIB
    return total


def vllm_defaults(gpu: GPU, version: tuple[int, int]) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) of ``vllm serve`` when not given (chunked prefill on)."""
    name = f"{gpu.id} {gpu.name}".lower()
    if version < (0, 8):
        return 2048, 256
    if version < (0, 9):
        return (8192 if "h100" in name or "h200" in name else 2048), 256
    if cuda_total_bytes(gpu) >= 70 * GIB and "a100" not in name:
        return 8192, 1024
    return 2048, 256


def sglang_server_defaults(gpu: GPU, tp: int) -> tuple[int, int]:
    """SGLang's (chunked_prefill_size, cuda_graph_max_bs) by GPU memory class (server_args, late 2025)."""
    gb = cuda_total_bytes(gpu) / 2**20 / 1024
    if gb < 20:
        return 2048, 8
    if gb < 35:
        return 2048, 24 if tp < 4 else 80
    if gb < 60:
        return 4096, 32 if tp < 4 else 160
    if gb < 160:
        return 8192, 256 if tp < 4 else 512
    return 16384, 512


def sglang_default_fraction(gpu: GPU, tp: int, pp: int = 1) -> float:
    """SGLang's default mem_fraction_static (server_args, late 2025): reserve by GPU memory class."""
    mem_mb = cuda_total_bytes(gpu) / 2**20
    gb = mem_mb / 1024
    chunk, graph_bs = sglang_server_defaults(gpu, tp)
    reserved = 512 + max(chunk, 2048) * 1.5 + graph_bs * 2 + tp * pp / 8 * 1024
    if gb > 60:
        reserved = max(reserved, 10 * 1024)
    return round((mem_mb - reserved) / mem_mb, 3)


def _widest_per_token(arch: Architecture, tp: int) -> float:
    """bf16 elements per token of the widest MLP / fused-MoE intermediate on one rank."""
    widest = 0.0
    for layer in arch.layers:
        mlp = layer.mlp
        if mlp is None or mlp.kind == "linear":
            continue
        if isinstance(mlp, MoE):
            term = 3 * (mlp.top_k * mlp.expert_intermediate + mlp.shared_intermediate) / tp + \
                mlp.top_k * arch.hidden_size
        else:
            term = 3 * getattr(mlp, "intermediate", 0) / tp
        widest = max(widest, term)
    return widest


_WIDEST: dict[tuple[int, int], tuple[Architecture, float]] = model_memo()


def forward_peak_bytes(arch: Architecture, tokens: int, tp: int) -> float:
    key = (id(arch), tp)  # identity-keyed, the object kept (the planner and the grid ask per GPU kind)
    hit = _WIDEST.get(key)
    if hit is None or hit[0] is not arch:
        if len(_WIDEST) > 4096:
            _WIDEST.clear()
        hit = _WIDEST[key] = (arch, _widest_per_token(arch, tp))
    return tokens * 2 * (FORWARD_HIDDEN_BUFFERS * arch.hidden_size + hit[1])


def mxfp4_pad_factor(gpu: GPU, intermediate: int, hidden: int, tp: int) -> float:
    """MXFP4 expert weights as vLLM/SGLang repack them: the per-rank intermediate and the hidden size padded for the
    kernel (Blackwell FlashInfer 256/256; Hopper and older Marlin/Triton 128/256; ROCm 256/256)."""
    per_rank = intermediate / tp
    if gpu.is_nvidia and not gpu.supports_mxfp4:
        a_i, a_h = 128, 256
    else:
        a_i, a_h = 256, 256
    padded = math.ceil(per_rank / a_i) * a_i * math.ceil(hidden / a_h) * a_h
    return padded / (per_rank * hidden)


@record(many=True)
class EngineStartup(CamelRecord):
    """What the engine would log at start-up, per GPU (the tightest pipeline stage when stages differ)."""

    engine: str
    version: str
    gpu_memory_utilization: float  # vLLM's utilisation, SGLang's mem_fraction_static, 1.0 for llama.cpp
    total_gib: float = alias("totalGiB")  # what the framework sees per GPU
    weights_gib_per_gpu: float = alias("weightsGiBPerGpu")
    activation_gib: float = alias("activationGiB")
    non_torch_gib: float = alias("nonTorchGiB")
    cuda_graph_gib: float = alias("cudaGraphGiB")
    kv_cache_gib_per_gpu: float = alias("kvCacheGiBPerGpu")  # the pool (negative: the engine fails to start)
    kv_cache_tokens: int
    max_concurrency: float  # requests of ``max_model_len`` tokens the pool holds
    max_model_len: int
    max_num_batched_tokens: int | None
    max_num_seqs: int | None
    block_size: int | None
    starts: bool  # the pool holds at least one request of max_model_len (vLLM refuses to start otherwise)
    note: str
