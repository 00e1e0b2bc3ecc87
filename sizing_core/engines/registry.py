"""The engines the project models, one instance of each class with its default settings, looked up by id."""

from __future__ import annotations

from ..gpus import GPU
from .base import Engine, UnknownEngineError
from .llamacpp import LlamaCpp
from .mlx import MLX
from .sglang import SGLang
from .vllm import VLLM

ENGINES: dict[str, Engine] = {
    "vllm": VLLM(id="vllm", name="vLLM", memory_fraction=0.9, fixed_overhead_gib=0.0, tensor_parallel=True,
                 splits_layers=True,
                 usable_rule="gpu_memory_utilization (0.9) x the memory CUDA reports, minus the profile run's "
                             "activation peak (forward pass of max_num_batched_tokens, sampler warm-up of "
                             "max_num_seqs rows over the vocabulary), non-torch memory (NCCL, cuBLAS) and the "
                             "CUDA-graph estimate"),
    "sglang": SGLang(id="sglang", name="SGLang", memory_fraction=None, fixed_overhead_gib=0.0, tensor_parallel=True,
                     splits_layers=True,
                     usable_rule="mem_fraction_static (by default from the GPU's memory: 1 - (0.5 GB + 1.5 x "
                                 "chunked prefill + CUDA-graph batch + TP x PP / 8 GB) / memory) x the memory free "
                                 "at start"),
    "llama.cpp": LlamaCpp(id="llama.cpp", name="llama.cpp", memory_fraction=1.0, fixed_overhead_gib=0.3,
                          tensor_parallel=False, splits_layers=True,
                          usable_rule="device memory (unified: the GPU's default share) minus 0.3 GiB context and "
                                      "the compute buffer (n_ubatch 512 rows of logits and activations)"),
    "mlx": MLX(id="mlx", name="MLX", memory_fraction=1.0, fixed_overhead_gib=0.5, tensor_parallel=False,
               splits_layers=True,
               usable_rule="Metal wired-memory limit (about 75% of RAM by default) minus 0.5 GiB"),
}

#: other names users give an engine: spellings of llama.cpp, and Ollama (which runs llama.cpp)
ALIASES = {"llamacpp": "llama.cpp", "llama-cpp": "llama.cpp", "ollama": "llama.cpp"}


def get_engine(engine_id: str) -> Engine:
    """The engine of an id or alias, case-insensitive."""
    engine = ENGINES.get(engine_id)  # an engine's own id (what the setups search asks millions of times)
    if engine is not None:
        return engine
    key = engine_id.lower().replace("llamacpp", "llama.cpp").replace("llama-cpp", "llama.cpp")
    key = ALIASES.get(key, key)
    try:
        return ENGINES[key]
    except KeyError:
        raise UnknownEngineError(f"unknown engine {engine_id!r} (known: {', '.join(ENGINES)}, ollama)") from None


def engines_on(gpu: GPU) -> list[Engine]:
    """The engines the project models on ``gpu`` (each engine says where it runs: ``Engine.runs_on``)."""
    return [engine for engine in ENGINES.values() if engine.runs_on(gpu)]


def default_engine(gpu: GPU) -> Engine:
    """The seed's scenario: vLLM on data-centre GPUs, llama.cpp elsewhere."""
    return ENGINES["vllm"] if gpu.kind == "datacenter" else ENGINES["llama.cpp"]
