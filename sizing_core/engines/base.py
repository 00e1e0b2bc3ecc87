"""What every engine answers: the base class and the small records its answers come in.

An engine is a start-up settings record (``memory_fraction``, ``version``, ``max_num_batched_tokens``, ...) whose
class decides what the settings mean: one subclass per engine (``vllm.py``, ``sglang.py``, ``llamacpp.py``,
``mlx.py``), each implementing what differs between engines: usable memory, the profile run's activation peak,
non-torch and CUDA-graph memory, how the KV pool is paged from the layers' cache specs, which weight formats it
runs on which GPU, how it joins GPUs and machines, its speed family and its launch command. Callers never ask an
engine its name to decide: they call the method.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import ClassVar, Literal

from ..architecture import Architecture
from ..errors import SizingError
from ..gpus import GPU
from ..kv_layout import Pool
from ..plan import Placement
from ..record import Record, record
from ..units import GIB
from .commands import Launch
from .memory import EngineStartup, cuda_total_bytes

EngineId = Literal["vllm", "sglang", "llama.cpp", "mlx"]


class UnknownEngineError(SizingError):
    pass


@record(many=True)
class Support(Record):
    """Whether ``engine`` runs a weight format on a GPU, natively or through a fallback kernel."""

    runs: bool
    native: bool
    note: str


@dataclass(frozen=True)
class Scheduler:
    """How an engine batches running requests, as far as its settings and defaults say: at most ``max_num_seqs``
    requests at once (None: the KV pool decides) and at most ``max_num_batched_tokens`` tokens per step (the
    chunked-prefill budget; llama.cpp's ``n_ubatch``; None: not known). Serving under load builds on this."""

    max_num_seqs: int | None
    max_num_batched_tokens: int | None


#: A checkpoint's own storage format as the serving format whose kernels run it (GPTQ of any width, bitsandbytes,
#: channel-wise FP8 and compressed-tensors' other int layouts).
NATIVE_AS_FORMAT = {"fp8_block": "fp8", "fp8_channel": "fp8", "int4": "awq_int4", "int4_channel": "awq_int4",
                    "gptq_int4": "awq_int4", "gptq_int8": "int8", "bnb_int8": "int8", "int8_group": "int8",
                    "fp32": "bf16"}


def effective_format(arch: Architecture, fmt: str) -> str:
    """``native`` resolved to the format the checkpoint stores (e.g. ``fp8_block`` -> ``fp8``)."""
    if fmt != "native":
        return fmt
    native = arch.native.weight_format
    return NATIVE_AS_FORMAT.get(native, native)


def _reference_gpu() -> GPU:
    from ..gpus import get_gpu

    return get_gpu("h100")


@record
class Engine(Record):
    """An inference engine with its start-up settings; ``None`` settings take the engine's own defaults for the
    GPU and version. Subclasses implement the behaviour; the base holds what all share."""

    id: EngineId
    name: str
    memory_fraction: float | None  # vLLM gpu_memory_utilization, SGLang mem_fraction_static (None: its formula)
    fixed_overhead_gib: float  # llama.cpp/MLX per GPU: context and Metal buffers (vLLM/SGLang: non-torch memory)
    tensor_parallel: bool  # splits attention heads across GPUs of one machine
    splits_layers: bool  # pipeline / layer split across GPUs and machines
    usable_rule: str
    version: str | None = None  # e.g. "0.14.1"; None: the newest behaviour modelled
    max_num_batched_tokens: int | None = None  # vLLM/SGLang chunk; llama.cpp n_ubatch
    max_num_seqs: int | None = None
    enforce_eager: bool = False

    #: key of the fitted speed tables in ``engines.speed`` (``server``: vLLM/SGLang, ``llama.cpp``: GGUF runners)
    speed_family: ClassVar[str]
    #: llama.cpp's CUDA kernels accumulate in FP16 on GeForce cards (full tensor rate); the servers in FP32
    fp16_accumulate_on_geforce: ClassVar[bool] = False
    #: several machines are joined by llama.cpp's RPC servers rather than a cluster fabric
    joins_machines_over_rpc: ClassVar[bool] = False
    #: the layer kinds (``Kind.kind``) the engine implements; None: not claimed for any architecture
    layer_kinds: ClassVar[frozenset[str] | None] = None
    #: the highest memory fraction worth suggesting when a deployment falls just short (None: the engine's
    #: fraction is not a setting that buys room: SGLang's activations live in its 1 - fraction reserve)
    highest_memory_fraction: ClassVar[float | None] = None
    #: the compact KV-cache type to suggest when the cache binds (None: none)
    compact_kv_dtype: ClassVar[str | None] = None

    # --- settings -------------------------------------------------------------------------------------------
    def with_settings(self, **settings: object) -> Engine:
        """This engine with some start-up settings changed (None values are ignored); a setting this engine does
        not have (vLLM's ``num_scheduler_steps`` asked of llama.cpp) is a :class:`SizingError` naming it."""
        update = {k: v for k, v in settings.items() if v is not None}
        unknown = sorted(set(update) - {f.name for f in fields(self)})
        if unknown:
            raise SizingError(f"{self.name} has no setting {', '.join(unknown)}")
        return self.model_copy(update=update) if update else self

    def version_text(self) -> str:
        """The version a start-up figure is for: the one asked, else the newest modelled."""
        return self.version or "current"

    def runs_on(self, gpu: GPU) -> bool:
        """Whether the project models this engine on ``gpu`` at all (the sizing grid's GPU x engine rows; which
        formats it then runs is ``supports``)."""
        raise NotImplementedError(f"{type(self).__name__} states the GPUs it runs on")

    def scheduler(self, gpu: GPU) -> Scheduler:
        """The batching limits the engine runs with on ``gpu`` (its settings, else its defaults)."""
        return Scheduler(max_num_seqs=self.max_num_seqs, max_num_batched_tokens=self.max_num_batched_tokens)

    def running_cap(self, start: EngineStartup) -> int | None:
        """At most this many requests run at once whatever the KV pool holds (None: the pool decides)."""
        return None

    # --- memory ---------------------------------------------------------------------------------------------
    def usable_bytes(self, gpu: GPU, tp: int = 1) -> float:
        """Memory for weights, cache, state and activations on one GPU."""
        raise NotImplementedError

    def overhead_bytes(self, gpu: GPU, tp: int = 1) -> float:
        """What the engine holds inside its budget besides weights, cache and activations (engine overhead)."""
        raise NotImplementedError

    def activation(self, arch: Architecture, gpu: GPU, tp: int, max_model_len: int | None = None
                   ) -> tuple[float, int, int]:
        """(working-memory bytes on one rank, max_num_batched_tokens, max_num_seqs) the profile or compute buffer
        is sized with (0 where the engine has no such setting)."""
        raise NotImplementedError

    def activation_bytes(self, arch: Architecture, tp: int, gpu: GPU | None = None) -> float:
        """Per-GPU working memory besides weights and cache (without a GPU, the large-GPU defaults: H100's)."""
        return self.activation(arch, gpu or _reference_gpu(), tp)[0]

    def non_torch_bytes(self, tp: int) -> float:
        """Memory a rank adds outside the framework's allocator during start-up (NCCL, cuBLAS workspaces)."""
        return 0.0

    def cuda_graph_bytes(self) -> float:
        """CUDA-graph memory of a rank (outside the KV pool)."""
        return 0.0

    def repacks(self, stored: str) -> bool:
        """Whether the engine repacks weights stored in ``stored`` for its kernels, adding bytes."""
        return False

    def repack_extra_bytes(self, arch: Architecture, stored: str, gpu: GPU, tp: int, layers: range) -> float:
        """Bytes on one rank the engine adds to the stored weights of ``layers`` when it repacks them."""
        return 0.0

    def kv_pool(self, arch: Architecture, gpu: GPU, layers: range, weights: float, tp: int, stages: int,
                activation: tuple[float, int, int], non_torch: float, max_model_len: int, kv_cache_dtype: str,
                concurrency: int) -> tuple[float, float, Pool]:
        """(memory fraction, pool bytes, paged pool) of one pipeline stage holding ``layers`` and ``weights``
        bytes per GPU, from the layers' cache specs; ``activation`` is :meth:`activation`'s answer."""
        raise NotImplementedError

    def startup(self, arch: Architecture, gpu: GPU, stages: list[tuple[range, float]], tp: int,
                max_model_len: int, kv_cache_dtype: str, concurrency: int = 1) -> EngineStartup:
        """The engine's start-up figures for a plan: ``stages`` = (layers, weight bytes per GPU) of each pipeline
        stage (from ``placement``), TP ranks per stage; the tightest stage is reported."""
        total = cuda_total_bytes(gpu)
        activation = self.activation(arch, gpu, tp, max_model_len)
        act, mnbt, seqs = activation
        nontorch = self.non_torch_bytes(tp)
        graphs = self.cuda_graph_bytes()
        best: tuple[float, Pool, float] | None = None
        util = 1.0
        for layers, weights in stages:
            util, pool_bytes, pool = self.kv_pool(arch, gpu, layers, weights, tp, len(stages), activation, nontorch,
                                                  max_model_len, kv_cache_dtype, concurrency)
            if best is None or pool.max_concurrency < best[1].max_concurrency:
                best = (pool_bytes, pool, weights)
        assert best is not None
        pool_bytes, pool, weights = best
        notes = [pool.note] if pool.note else []
        conc = pool.max_concurrency
        return EngineStartup(
            engine=self.id, version=self.version_text(), gpu_memory_utilization=util, total_gib=total / GIB,
            weights_gib_per_gpu=max(w for _, w in stages) / GIB, activation_gib=act / GIB,
            non_torch_gib=nontorch / GIB, cuda_graph_gib=graphs / GIB, kv_cache_gib_per_gpu=pool_bytes / GIB,
            kv_cache_tokens=pool.tokens, max_concurrency=round(conc, 2) if math.isfinite(conc) else 1e9,
            max_model_len=max_model_len, max_num_batched_tokens=mnbt or None, max_num_seqs=seqs or None,
            block_size=pool.block_size, starts=conc >= 1, note="; ".join(notes))

    # --- formats --------------------------------------------------------------------------------------------
    def supports(self, gpu: GPU, fmt: str, arch: Architecture | None = None) -> Support:
        """Whether the engine runs ``fmt`` (``native``: the checkpoint as stored) on ``gpu``."""
        if fmt == "native":
            if arch is None:
                raise SizingError("the native format needs the model's architecture")
            if arch.native.unsupported:
                return Support(runs=False, native=False, note=f"native format unknown: {arch.native.unsupported}")
            refused = self.refuses_checkpoint(arch)
            if refused is not None:
                return refused
            fmt = effective_format(arch, fmt)
            if fmt == "mixed":  # ModelOpt MIXED_PRECISION: the engine needs the kernels of its most demanding format
                kinds = {f for _, f, _ in arch.native.per_module}
                fmt = "nvfp4" if kinds & {"nvfp4", "w4a16_nvfp4"} else "mxfp4" if "mxfp4" in kinds else "fp8"
        return self.supports_format(gpu, fmt, arch)

    def refuses_checkpoint(self, arch: Architecture) -> Support | None:
        """Why the engine cannot load the model's checkpoint as stored (None: it can try)."""
        return None

    def supports_format(self, gpu: GPU, fmt: str, arch: Architecture | None) -> Support:
        """Whether the engine runs the (resolved) weight format ``fmt`` on ``gpu``."""
        raise NotImplementedError

    def substitute_format(self, fmt: str, gpu: GPU) -> str:
        """The format that stands for ``fmt`` on this engine and GPU: the one home of the stand-ins, read by
        ``vramlab fit`` (when the engine does not serve the format asked) and by the model JSON (its ``fp8`` and
        ``q4_k_m`` columns are the engine's 8-bit and 4-bit formats)."""
        raise NotImplementedError

    # --- speed ----------------------------------------------------------------------------------------------
    def eager(self) -> bool:
        """No CUDA graphs: asked for (or an engine version from before them)."""
        return self.enforce_eager

    def layer_cost_key(self) -> str:
        """Key of ``engines.speed.LAYER_US``: the per-layer fixed cost this engine and version pays."""
        return self.speed_family

    # --- launch ---------------------------------------------------------------------------------------------
    def launch(self, p: Placement, repo: str, gguf_repo: str | None, quantized_repo: str | None) -> Launch:
        """The command that starts the engine for a placed plan."""
        raise NotImplementedError

    def rope_flags(self, scaling: dict[str, object]) -> str:
        """Command-line flags that turn ``scaling`` (``rope_type``, ``factor``, ``original_max_position_embeddings``)
        on at load time."""
        raise NotImplementedError

