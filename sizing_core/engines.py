"""Inference engines: how much of a GPU each may use, which formats it runs where, how it parallelises.

Sources (see ``docs/placement.md``): vLLM ``gpu_memory_utilization`` (0.9 of the driver-reported total, then the
profile run's activation peak, CUDA graphs and non-torch memory come out of it); SGLang ``mem_fraction_static``;
llama.cpp's compute buffer; vLLM's quantization hardware matrix, by compute capability
(https://docs.vllm.ai/en/v0.11.2/features/quantization/ and v0.14.0: AWQ from Turing 7.5, GPTQ from Volta 7.0,
Marlin from Ampere 8.0, INT8 W8A8 from Turing 7.5, FP8 W8A8 from Ada 8.9 and on AMD; none of AWQ/GPTQ/INT8 on AMD;
https://docs.vllm.ai/en/v0.32.0/features/quantization/llm_compressor/fp8/: FP8 checkpoints run weight-only W8A16
through FP8-Marlin from 7.5), NVFP4 native only on Blackwell (Marlin weight-only from 8.0), MXFP4 native on
Blackwell and CDNA4. Where a format runs only through a fallback kernel, ``Support.native`` is False and the note
names the fallback.
"""

from __future__ import annotations

from typing import Literal

from . import engine_memory
from .architecture import Architecture
from .errors import SizingError
from .formats import GGUF_MIXES
from .gpus import GPU
from .record import Record, record
from .units import GIB

EngineId = Literal["vllm", "sglang", "llama.cpp", "mlx"]


class UnknownEngineError(SizingError):
    pass


@record
class Support(Record):
    """Whether ``engine`` runs a weight format on a GPU, natively or through a fallback kernel."""

    runs: bool
    native: bool
    note: str


@record
class Engine(Record):
    """An inference engine with its start-up settings; ``None`` settings take the engine's own defaults for the
    GPU and version (``engine_memory``)."""

    id: EngineId
    name: str
    memory_fraction: float | None  # vLLM gpu_memory_utilization, SGLang mem_fraction_static (None: its formula)
    fixed_overhead_gib: float  # llama.cpp/MLX per GPU: context and Metal buffers (vLLM/SGLang: engine_memory)
    tensor_parallel: bool  # splits attention heads across GPUs of one machine
    splits_layers: bool  # pipeline / layer split across GPUs and machines
    usable_rule: str
    version: str | None = None  # e.g. "0.14.1"; None: the newest behaviour modelled
    max_num_batched_tokens: int | None = None  # vLLM/SGLang chunk; llama.cpp n_ubatch
    max_num_seqs: int | None = None
    enforce_eager: bool = False

    def activation_bytes(self, arch: Architecture, tp: int, gpu: GPU | None = None) -> float:
        """Per-GPU working memory besides weights and cache: vLLM's profiled peak (forward pass of
        ``max_num_batched_tokens`` and the sampler warm-up of ``max_num_seqs`` rows over the vocabulary; the
        defaults follow the GPU, so without one the large-GPU defaults are used), llama.cpp's compute buffer,
        nothing for SGLang (its activations live in the 1 - mem_fraction_static reserve)."""
        gpu = gpu or _REFERENCE_GPU()
        return engine_memory.activation_bytes(arch, gpu, self, tp)[0]

    def usable_bytes(self, gpu: GPU, tp: int = 1) -> float:
        """Memory for weights, cache, state and activations on one GPU: vLLM utilisation x total - non-torch
        memory (CUDA graphs live in the 1 - utilisation head-room); SGLang mem_fraction_static x what is free at start; llama.cpp/MLX the device (unified:
        its GPU share) minus a fixed context."""
        if self.id == "vllm":
            util = self.memory_fraction if self.memory_fraction is not None else 0.9
            return util * engine_memory.cuda_total_bytes(gpu) - engine_memory.non_torch_bytes(self, tp)
        if self.id == "sglang":
            frac = self.memory_fraction if self.memory_fraction is not None else \
                engine_memory.sglang_default_fraction(gpu, tp)
            return frac * (engine_memory.cuda_total_bytes(gpu) - engine_memory.CUDA_CONTEXT_GIB * GIB
                           - engine_memory.non_torch_bytes(self, tp))
        return gpu.memory_bytes * (self.memory_fraction or 1.0) - self.fixed_overhead_gib * GIB

    def overhead_bytes(self, gpu: GPU, tp: int = 1) -> float:
        """What the engine holds inside its budget besides weights, cache and activations (engine overhead)."""
        if self.id in ("vllm", "sglang"):
            return engine_memory.non_torch_bytes(self, tp)
        return self.fixed_overhead_gib * GIB

    def with_settings(self, **settings: object) -> Engine:
        """This engine with some start-up settings changed (None values are ignored)."""
        update = {k: v for k, v in settings.items() if v is not None}
        return self.model_copy(update=update) if update else self

    def supports(self, gpu: GPU, fmt: str, arch: Architecture | None = None) -> Support:
        return _support(self, gpu, fmt, arch)


def _REFERENCE_GPU() -> GPU:  # noqa: N802 - a constant computed on first use
    from .gpus import get_gpu

    return get_gpu("h100")


ENGINES: dict[str, Engine] = {
    "vllm": Engine(id="vllm", name="vLLM", memory_fraction=0.9, fixed_overhead_gib=0.0, tensor_parallel=True,
                   splits_layers=True,
                   usable_rule="gpu_memory_utilization (0.9) x the memory CUDA reports, minus the profile run's "
                               "activation peak (forward pass of max_num_batched_tokens, sampler warm-up of "
                               "max_num_seqs rows over the vocabulary), non-torch memory (NCCL, cuBLAS) and the "
                               "CUDA-graph estimate"),
    "sglang": Engine(id="sglang", name="SGLang", memory_fraction=None, fixed_overhead_gib=0.0, tensor_parallel=True,
                     splits_layers=True,
                     usable_rule="mem_fraction_static (by default from the GPU's memory: 1 - (0.5 GB + 1.5 x "
                                 "chunked prefill + CUDA-graph batch + TP x PP / 8 GB) / memory) x the memory free "
                                 "at start"),
    "llama.cpp": Engine(id="llama.cpp", name="llama.cpp", memory_fraction=1.0, fixed_overhead_gib=0.3,
                        tensor_parallel=False, splits_layers=True,
                        usable_rule="device memory (unified: the GPU's default share) minus 0.3 GiB context and "
                                    "the compute buffer (n_ubatch 512 rows of logits and activations)"),
    "mlx": Engine(id="mlx", name="MLX", memory_fraction=1.0, fixed_overhead_gib=0.5, tensor_parallel=False,
                  splits_layers=True,
                  usable_rule="Metal wired-memory limit (about 75% of RAM by default) minus 0.5 GiB"),
}


def get_engine(engine_id: str) -> Engine:
    key = engine_id.lower().replace("llamacpp", "llama.cpp").replace("llama-cpp", "llama.cpp")
    if key in ("ollama",):
        key = "llama.cpp"
    try:
        return ENGINES[key]
    except KeyError:
        raise UnknownEngineError(f"unknown engine {engine_id!r} (known: {', '.join(ENGINES)}, ollama)") from None


def default_engine(gpu: GPU) -> Engine:
    """The seed's scenario: vLLM on data-centre GPUs, llama.cpp elsewhere."""
    return ENGINES["vllm"] if gpu.kind == "datacenter" else ENGINES["llama.cpp"]


def effective_format(arch: Architecture, fmt: str) -> str:
    """``native`` resolved to the format the checkpoint stores (e.g. ``fp8_block`` -> ``fp8``)."""
    if fmt != "native":
        return fmt
    native = arch.native.weight_format
    return NATIVE_AS_FORMAT.get(native, native)


#: A checkpoint's own storage format as the serving format whose kernels run it (#25 added GPTQ of any width,
#: bitsandbytes, channel-wise FP8 and compressed-tensors' other int layouts).
NATIVE_AS_FORMAT = {"fp8_block": "fp8", "fp8_channel": "fp8", "int4": "awq_int4", "int4_channel": "awq_int4",
                    "gptq_int4": "awq_int4", "gptq_int8": "int8", "bnb_int8": "int8", "int8_group": "int8",
                    "fp32": "bf16"}


def _support(engine: Engine, gpu: GPU, fmt: str, arch: Architecture | None) -> Support:
    if fmt == "native":
        if arch is None:
            raise SizingError("the native format needs the model's architecture")
        if arch.native.unsupported:
            return Support(runs=False, native=False, note=f"native format unknown: {arch.native.unsupported}")
        if engine.id in ("llama.cpp", "mlx") and arch.native.weight_format not in ("bf16", "fp16", "fp32", "mxfp4"):
            return Support(runs=False, native=False,
                           note=f"{engine.name} cannot load the {arch.native.weight_format} checkpoint; "
                                "it needs a GGUF/MLX conversion")
        fmt = effective_format(arch, fmt)
        if fmt == "mixed":  # ModelOpt MIXED_PRECISION: the engine needs the kernels of its most demanding format
            kinds = {f for _, f, _ in arch.native.per_module}
            fmt = "nvfp4" if kinds & {"nvfp4", "w4a16_nvfp4"} else "mxfp4" if "mxfp4" in kinds else "fp8"
    if engine.id == "mlx":
        if gpu.kind != "apple":
            return Support(runs=False, native=False, note="MLX runs on Apple silicon only")
        ok = fmt in ("bf16", "fp16", "q8_0", "mxfp4")
        return Support(runs=ok, native=ok, note="MLX" if ok else f"MLX has no {fmt} format")
    if engine.id == "llama.cpp":
        if gpu.kind == "datacenter" and not (gpu.is_nvidia or gpu.vendor == "AMD"):
            return Support(runs=False, native=False, note=f"llama.cpp has no backend for {gpu.vendor} accelerators")
        if fmt in GGUF_MIXES or fmt in ("bf16", "fp16"):
            return Support(runs=True, native=True, note="GGUF")
        if fmt == "mxfp4":
            native = bool(gpu.supports_mxfp4)
            return Support(runs=True, native=native, note="GGUF MXFP4" + ("" if native else " (dequantizing kernels)"))
        return Support(runs=False, native=False, note=f"llama.cpp has no {fmt} weights; use a GGUF type such as q8_0")
    # vLLM / SGLang
    if gpu.kind in ("apple", "unified") and not gpu.is_nvidia:
        return Support(runs=False, native=False, note=f"{engine.name} does not run on {gpu.name}")
    if fmt in GGUF_MIXES:
        return Support(runs=False, native=False, note=f"{engine.name} serves GGUF only experimentally; use llama.cpp")
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
                           note=f"no FP8 tensor cores (compute capability {cc:g} < 8.9): weight-only W8A16 through "
                                "FP8-Marlin")
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
                           note="Volta: no AWQ and no Marlin kernels in vLLM (compute capability 7.5 / 8.0 needed); "
                                "a GPTQ int4 checkpoint runs through the slower GPTQ (exllama) kernels")
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
    return Support(runs=False, native=False, note=f"{engine.name} has no {fmt} support")
