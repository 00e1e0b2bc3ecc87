"""vLLM (V1, and V0 before 0.8): how it sizes its memory, pages its KV pool and starts.

Memory (``vllm/v1/worker/gpu_worker.py: determine_available_memory``; figures in ``docs/calibration.md``)::

    KV pool = utilisation x total - weights - activation peak - non-torch increase

with the activation peak the larger of one forward pass of ``max_num_batched_tokens`` tokens and the sampler
warm-up of ``min(max_num_batched_tokens, max_num_seqs)`` rows over the vocabulary; CUDA graphs live in the
1 - utilisation head-room. The pool is paged per cache group (``kv_layout.vllm_pool``). Behaviour that changed with
the version is read off ``version`` (None: the newest modelled, ``engines.memory.CURRENT_VLLM``).
"""

from __future__ import annotations

import json
from typing import ClassVar

from ..architecture import Architecture
from ..gpus import GPU
from ..kv_layout import Pool, layer_specs, vllm_pool
from ..plan import Placement
from ..record import record
from ..units import GIB
from .base import Scheduler
from .commands import VLLM_KV, Launch
from .memory import (
    CUDA_GRAPH_GIB,
    CURRENT_VLLM,
    SAMPLER_BYTES,
    SAMPLER_BYTES_2026,
    SAMPLER_CHANGE,
    EngineStartup,
    cuda_total_bytes,
    forward_peak_bytes,
    parse_version,
    vllm_defaults,
)
from .server import SERVED_LAYER_KINDS, ServerEngine


@record
class VLLM(ServerEngine):
    """vLLM: ``gpu_memory_utilization`` of what CUDA reports, a profiled activation peak, paged cache groups."""

    #: with the encoder-decoder decoder layer: vLLM's V1 engine serves Whisper (cross-attention KV per request)
    layer_kinds: ClassVar[frozenset[str] | None] = SERVED_LAYER_KINDS | {"mamba", "self_and_cross_attention"}
    #: 0.95 leaves 5% of what CUDA reports for CUDA graphs (``engines.memory.CUDA_GRAPH_GIB``) and fragmentation
    highest_memory_fraction: ClassVar[float | None] = 0.95

    #: ``--num-scheduler-steps`` (V0's multi-step scheduling, vLLM 0.6-0.9): the engine runs that many decode steps
    #: per scheduling decision, so a prompt that arrives waits for the window under way (None: one, as V1 does)
    num_scheduler_steps: int | None = None

    def version_tuple(self) -> tuple[int, int]:
        return parse_version(self.version) or CURRENT_VLLM

    def version_text(self) -> str:
        return self.version or ".".join(map(str, CURRENT_VLLM))

    def runs_on(self, gpu: GPU) -> bool:
        """CUDA and ROCm GPUs and the other data-centre accelerators vLLM has a backend for; of the unified-memory
        machines, NVIDIA's (DGX Spark); not Apple silicon."""
        if gpu.kind == "apple":
            return False
        if gpu.kind == "unified":
            return gpu.is_nvidia
        return gpu.is_nvidia or gpu.is_amd_instinct or gpu.kind == "datacenter"

    def scheduler(self, gpu: GPU) -> Scheduler:
        """``vllm serve``'s limits: the settings given, else its defaults by version and GPU (chunked prefill)."""
        mnbt, seqs = vllm_defaults(gpu, self.version_tuple())
        return Scheduler(max_num_seqs=self.max_num_seqs or seqs,
                         max_num_batched_tokens=self.max_num_batched_tokens or mnbt)

    def running_cap(self, start: EngineStartup) -> int | None:
        return start.max_num_seqs or None

    def usable_bytes(self, gpu: GPU, tp: int = 1) -> float:
        """Utilisation x total - non-torch memory (CUDA graphs live in the 1 - utilisation head-room)."""
        util = self.memory_fraction if self.memory_fraction is not None else 0.9
        return util * cuda_total_bytes(gpu) - self.non_torch_bytes(tp)

    def activation(self, arch: Architecture, gpu: GPU, tp: int, max_model_len: int | None = None
                   ) -> tuple[float, int, int]:
        """The profile run's peak: a forward pass of ``max_num_batched_tokens`` (V0 without chunked prefill:
        ``max(max_model_len, 2048)`` up to 32k) or the sampler warm-up, whichever is larger."""
        version = self.version_tuple()
        sched = self.scheduler(gpu)
        mnbt, seqs = sched.max_num_batched_tokens, sched.max_num_seqs
        assert mnbt is not None and seqs is not None
        tokens = mnbt
        if version < (0, 8) and max_model_len and not self.max_num_batched_tokens:
            tokens = max(mnbt, max_model_len) if max_model_len <= 32768 else mnbt  # V0: no chunked prefill
        rows = min(tokens, seqs)
        per_element = SAMPLER_BYTES if version < SAMPLER_CHANGE else SAMPLER_BYTES_2026
        sampler = tokens * 2 * arch.hidden_size + per_element * rows * arch.vocab_size
        return max(forward_peak_bytes(arch, tokens, tp), sampler), mnbt, seqs

    def cuda_graph_bytes(self) -> float:
        return 0.0 if self.enforce_eager else CUDA_GRAPH_GIB * GIB

    def kv_pool(self, arch: Architecture, gpu: GPU, layers: range, weights: float, tp: int, stages: int,
                activation: tuple[float, int, int], non_torch: float, max_model_len: int, kv_cache_dtype: str,
                concurrency: int) -> tuple[float, float, Pool]:
        act, mnbt, _ = activation
        util = self.memory_fraction if self.memory_fraction is not None else 0.9
        pool_bytes = util * cuda_total_bytes(gpu) - weights - act - non_torch
        version = self.version_tuple()
        specs = layer_specs(arch, layers, kv_cache_dtype, tp, max_model_len)
        hybrid_manager = not (arch.model_type.startswith("gemma4") and version < (0, 21))
        pool = vllm_pool(specs, pool_bytes, max_model_len, mnbt, state_pages=2 if version >= (0, 20) else 1,
                         concurrency_tokens=version >= (0, 21), hybrid_manager=hybrid_manager)
        return util, pool_bytes, pool

    def eager(self) -> bool:
        """Asked for, or a version from before CUDA graphs (< 0.3)."""
        version = parse_version(self.version)
        return self.enforce_eager or (version is not None and version < (0, 3))

    def launch(self, p: Placement, repo: str, gguf_repo: str | None, quantized_repo: str | None) -> Launch:
        plan = p.plan
        assert plan is not None
        checkpoint, how = self.checkpoint(p, repo, quantized_repo)
        parts = [f"vllm serve {checkpoint}", f"--tensor-parallel-size {plan.tensor_parallel}"]
        if plan.pipeline_parallel > 1:
            parts.append(f"--pipeline-parallel-size {plan.pipeline_parallel}")
        parts += [f"--max-model-len {p.context}", f"--max-num-seqs {max(p.concurrency, 1)}",
                  f"--kv-cache-dtype {VLLM_KV.get(p.kv_cache_dtype, 'auto')}",
                  f"--gpu-memory-utilization {self.memory_fraction or 0.9:.2f}"]
        if p.format == "fp8" and not repo.lower().endswith("fp8"):
            parts.append("--quantization fp8")
        note = "one Ray cluster over all nodes (ray start on each), then run this on the head node" \
            if plan.nodes > 1 else "single node"
        return Launch(engine=self.id, command=" \\\n  ".join(parts), nodes=plan.nodes, note=note + how)

    def rope_flags(self, scaling: dict[str, object]) -> str:
        return f" \\\n  --rope-scaling '{json.dumps(scaling)}'"
