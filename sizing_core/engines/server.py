"""What vLLM and SGLang share: CUDA/ROCm servers that split heads over tensor-parallel ranks, add non-torch memory per
rank, repack MXFP4 experts for their kernels, and run the quantization kernels of vLLM's hardware matrix.

Format support, by compute capability (https://docs.vllm.ai/en/v0.11.2/features/quantization/ and v0.14.0: AWQ from
Turing 7.5, GPTQ from Volta 7.0, Marlin from Ampere 8.0, INT8 W8A8 from Turing 7.5, FP8 W8A8 from Ada 8.9 and on
AMD; none of AWQ/GPTQ/INT8 on AMD; https://docs.vllm.ai/en/v0.32.0/features/quantization/llm_compressor/fp8/: FP8
checkpoints run weight-only W8A16 through FP8-Marlin from 7.5), NVFP4 native only on Blackwell (Marlin weight-only
from 8.0), MXFP4 native on Blackwell and CDNA4. Where a format runs only through a fallback kernel,
``Support.native`` is False and the note names the fallback.
"""

from __future__ import annotations

from typing import ClassVar

from ..architecture import Architecture
from ..formats import GGUF_MIXES
from ..gpus import GPU
from ..layers import MoE
from ..plan import Placement
from ..units import GIB
from .base import Engine, Support
from .commands import checkpoint
from .memory import NON_TORCH_GIB, NON_TORCH_PER_TP_GIB, mxfp4_pad_factor

#: layer kinds (``Kind.kind``) both servers implement; vLLM and llama.cpp add Mamba (vLLM: MambaForCausalLM,
#: FalconMambaForCausalLM, Jamba). Not claimed: RWKV (llama.cpp implements versions 6 and 7 only; the kind does not
#: tell versions apart), xLSTM, Mllama's cross-attention decoder.
SERVED_LAYER_KINDS = frozenset({"full_attention", "sliding_attention", "chunked_attention", "mla",
                                "compressed_sparse_attention", "kimi_delta_attention", "gated_deltanet", "mamba2",
                                "linear", "none"})


class ServerEngine(Engine):
    """vLLM and SGLang: what the two serving engines have in common."""

    speed_family: ClassVar[str] = "server"
    layer_kinds: ClassVar[frozenset[str] | None] = SERVED_LAYER_KINDS
    compact_kv_dtype: ClassVar[str | None] = "fp8"

    def overhead_bytes(self, gpu: GPU, tp: int = 1) -> float:
        return self.non_torch_bytes(tp)

    def non_torch_bytes(self, tp: int) -> float:
        return (NON_TORCH_GIB + NON_TORCH_PER_TP_GIB * (tp - 1)) * GIB

    def repacks(self, stored: str) -> bool:
        return stored == "mxfp4"

    def repack_extra_bytes(self, arch: Architecture, stored: str, gpu: GPU, tp: int, layers: range) -> float:
        """MXFP4 experts padded to the kernel's tile (``engines.memory.mxfp4_pad_factor``)."""
        if not self.repacks(stored):
            return 0.0
        extra = 0.0
        for i in layers:
            mlp = arch.layers[i].mlp
            if isinstance(mlp, MoE):
                routed = 3 * mlp.num_experts * mlp.expert_intermediate * arch.hidden_size * 4.25 / 8
                extra += routed / tp * (mxfp4_pad_factor(gpu, mlp.expert_intermediate, arch.hidden_size, tp) - 1)
        return extra

    def substitute_format(self, fmt: str, gpu: GPU) -> str:
        """8-bit is FP8 (INT8 without FP8 tensor cores), 4-bit GGUF is AWQ int4."""
        if fmt == "fp8":
            return "fp8" if gpu.supports_fp8 else "int8"
        if fmt in ("q4_k_m", "iq4_xs"):
            return "awq_int4"
        if fmt in ("q8_0",):
            return "fp8" if gpu.supports_fp8 else "int8"
        return fmt

    def supports_format(self, gpu: GPU, fmt: str, arch: Architecture | None) -> Support:
        if gpu.kind in ("apple", "unified") and not gpu.is_nvidia:
            return Support(runs=False, native=False, note=f"{self.name} does not run on {gpu.name}")
        if fmt in GGUF_MIXES:
            return Support(runs=False, native=False, note=f"{self.name} serves GGUF only experimentally; use llama.cpp")
        if fmt in ("bf16", "fp16"):
            return Support(runs=True, native=True, note="16-bit")
        if not (gpu.is_nvidia or gpu.is_amd_instinct):
            ok = fmt == "fp8" and bool(gpu.supports_fp8)
            return Support(runs=ok, native=ok, note=f"{gpu.vendor} backend: BF16/FP8 only")
        cc = gpu.compute_capability or 0.0
        moe = arch is not None and arch.is_moe
        if fmt == "fp8":
            if gpu.supports_fp8:
                return Support(runs=True, native=True, note="FP8 W8A8")
            if gpu.is_nvidia and cc >= 7.5 and not moe:
                return Support(runs=True, native=False,
                               note=f"no FP8 tensor cores (compute capability {cc:g} < 8.9): weight-only W8A16 "
                                    "through FP8-Marlin")
            return Support(runs=False, native=False,
                           note="FP8 MoE needs compute capability >= 8.9" if moe and cc >= 7.5 else
                           f"no FP8 kernels for {gpu.name} (vLLM: W8A8 from compute capability 8.9, W8A16 from 7.5)")
        if fmt == "int8":
            if gpu.is_nvidia and cc >= 7.5:
                return Support(runs=True, native=True, note="INT8 W8A8")
            return Support(runs=False, native=False,
                           note=f"vLLM's INT8 W8A8 kernels need an NVIDIA GPU of compute capability >= 7.5 (Turing); "
                                f"{gpu.name} is not supported (an 8-bit GGUF q8_0 with llama.cpp is the fallback)")
        if fmt == "awq_int4":
            if gpu.is_nvidia and cc >= 8.0:
                return Support(runs=True, native=True, note="AWQ/GPTQ int4 (Marlin kernels)")
            if gpu.is_nvidia and cc >= 7.5:
                return Support(runs=True, native=True,
                               note="AWQ/GPTQ int4 without Marlin (Marlin needs compute capability >= 8.0)")
            if gpu.is_nvidia and cc >= 7.0:
                return Support(runs=True, native=False,
                               note="Volta: no AWQ and no Marlin kernels in vLLM (compute capability 7.5 / 8.0 "
                                    "needed); a GPTQ int4 checkpoint runs through the slower GPTQ (exllama) kernels")
            return Support(runs=False, native=False,
                           note="AWQ/GPTQ kernels need an NVIDIA GPU in vLLM's hardware table (not AMD)")
        if fmt == "nvfp4":
            if gpu.supports_nvfp4:
                return Support(runs=True, native=True, note="NVFP4 on Blackwell FP4 tensor cores")
            if gpu.is_nvidia and cc >= 8.0:
                return Support(runs=True, native=False, note="no FP4 tensor cores: weight-only NVFP4 through Marlin")
            return Support(runs=False, native=False, note="NVFP4 needs an NVIDIA GPU")
        if fmt == "mxfp4":
            if gpu.supports_mxfp4:
                return Support(runs=True, native=True, note="MXFP4 on FP4 tensor cores")
            if gpu.is_nvidia and cc >= 8.0 or gpu.is_amd_instinct:
                return Support(runs=True, native=False, note="weight-only MXFP4 (Triton/Marlin kernels)")
            return Support(runs=False, native=False, note="no MXFP4 kernels for this GPU")
        return Support(runs=False, native=False, note=f"{self.name} has no {fmt} support")

    def checkpoint(self, p: Placement, repo: str, quantized_repo: str | None) -> tuple[str, str]:
        return checkpoint(p, repo, quantized_repo)
