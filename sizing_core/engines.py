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
    id: EngineId
    name: str
    memory_fraction: float  # share of the GPU's memory the engine takes for itself
    fixed_overhead_gib: float  # per GPU: CUDA context, CUDA graphs, NCCL / Metal buffers
    tensor_parallel: bool  # splits attention heads across GPUs of one machine
    splits_layers: bool  # pipeline / layer split across GPUs and machines
    usable_rule: str

    def activation_bytes(self, arch: Architecture, tp: int) -> float:
        """Per-GPU working memory besides weights and cache.

        vLLM/SGLang: the profile run pushes ``max_num_batched_tokens`` (8,192) through the model; its peak is
        a few hidden-sized bf16 buffers per token plus the widest MLP intermediate split over TP, and the
        logits of ``max_num_seqs`` (256) sampled sequences.
        llama.cpp: the compute buffer, dominated by ``n_ubatch`` (512) rows of f32 logits and hidden states.
        """
        h, vocab = arch.hidden_size, arch.vocab_size
        if self.id in ("vllm", "sglang"):
            widest = _widest_mlp(arch)
            return 8192 * (8 * h + 2 * widest / tp) * 2 + 256 * vocab * 4  # + fp32 logits of 256 sequences
        return 512 * (vocab + 8 * h) * 4

    def usable_bytes(self, gpu: GPU) -> float:
        """Memory for weights, cache, state and activations on one GPU."""
        return gpu.memory_bytes * self.memory_fraction - self.fixed_overhead_gib * GIB

    def supports(self, gpu: GPU, fmt: str, arch: Architecture | None = None) -> Support:
        return _support(self, gpu, fmt, arch)


_WIDEST: dict[int, tuple[Architecture, int]] = {}


def _widest_mlp(arch: Architecture) -> int:
    """The widest MLP intermediate of any layer, cached by object identity (the planner asks per candidate plan)."""
    hit = _WIDEST.get(id(arch))
    if hit is None or hit[0] is not arch:
        if len(_WIDEST) > 4096:
            _WIDEST.clear()
        hit = _WIDEST[id(arch)] = (arch, max((_mlp_width(layer) for layer in arch.layers), default=0))
    return hit[1]


def _mlp_width(layer) -> int:  # type: ignore[no-untyped-def]
    mlp = layer.mlp
    if mlp is None or mlp.kind == "linear":
        return 0
    if mlp.kind == "dense":
        return mlp.intermediate
    return max(mlp.expert_intermediate * mlp.top_k, mlp.shared_intermediate, mlp.dense_intermediate)


ENGINES: dict[str, Engine] = {
    "vllm": Engine(id="vllm", name="vLLM", memory_fraction=0.9, fixed_overhead_gib=1.0, tensor_parallel=True,
                   splits_layers=True,
                   usable_rule="0.9 x driver-reported memory (gpu_memory_utilization), minus 1 GiB for CUDA "
                               "context/graphs/NCCL and the profile run's activation peak"),
    "sglang": Engine(id="sglang", name="SGLang", memory_fraction=0.88, fixed_overhead_gib=1.0, tensor_parallel=True,
                     splits_layers=True,
                     usable_rule="0.88 x driver-reported memory (mem_fraction_static), minus 1 GiB for CUDA "
                                 "context/graphs and the activation peak"),
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
