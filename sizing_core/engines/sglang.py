"""SGLang: ``mem_fraction_static`` of what is free at start, one token pool of ``cell_size`` bytes per token
(``model_runner.profile_max_num_token``), activations in the 1 - mem_fraction_static reserve.

``pool = mem_fraction_static x (total - CUDA context - non-torch) - weights``; the default fraction follows the GPU's
memory (``engines.memory.sglang_default_fraction``); the pool is paged by ``kv_layout.sglang_pool``.
"""

from __future__ import annotations

import json

from ..architecture import Architecture
from ..gpus import GPU
from ..kv_layout import Pool, layer_specs, sglang_pool
from ..plan import Placement
from ..units import GIB
from .base import Scheduler
from .commands import SGLANG_KV, Launch
from .memory import (
    CUDA_CONTEXT_GIB,
    CURRENT_SGLANG,
    cuda_total_bytes,
    sglang_default_fraction,
    sglang_server_defaults,
)
from .server import ServerEngine

#: models whose SGLang build turns the hybrid sliding-window pool off (one pool sized as full attention)
NO_HYBRID_SWA = ("gpt_oss", "gemma2", "gemma3_text", "gemma3")


class SGLang(ServerEngine):
    """SGLang: a static memory fraction, one token pool (plus a sliding-window pool for hybrid-SWA models)."""

    def version_text(self) -> str:
        return self.version or ".".join(map(str, CURRENT_SGLANG))

    def runs_on(self, gpu: GPU) -> bool:
        """Discrete NVIDIA GPUs and AMD Instinct (its CUDA and ROCm builds); no unified-memory machine."""
        return gpu.kind not in ("apple", "unified") and (gpu.is_nvidia or gpu.is_amd_instinct)

    def scheduler(self, gpu: GPU) -> Scheduler:
        """The settings given, else the server's chunked-prefill size by GPU memory (``server_args``); the number
        of running requests is left to the token pool."""
        chunk, _ = sglang_server_defaults(gpu, 1)
        return Scheduler(max_num_seqs=self.max_num_seqs, max_num_batched_tokens=self.max_num_batched_tokens or chunk)

    def usable_bytes(self, gpu: GPU, tp: int = 1) -> float:
        """mem_fraction_static x what is free at start (total - CUDA context - non-torch)."""
        frac = self.memory_fraction if self.memory_fraction is not None else sglang_default_fraction(gpu, tp)
        return frac * (cuda_total_bytes(gpu) - CUDA_CONTEXT_GIB * GIB - self.non_torch_bytes(tp))

    def activation(self, arch: Architecture, gpu: GPU, tp: int, max_model_len: int | None = None
                   ) -> tuple[float, int, int]:
        """Nothing apart: SGLang's activations live in the 1 - mem_fraction_static reserve."""
        return 0.0, 0, 0

    def kv_pool(self, arch: Architecture, gpu: GPU, layers: range, weights: float, tp: int, stages: int,
                activation: tuple[float, int, int], non_torch: float, max_model_len: int, kv_cache_dtype: str,
                concurrency: int) -> tuple[float, float, Pool]:
        util = self.memory_fraction if self.memory_fraction is not None else \
            sglang_default_fraction(gpu, tp, stages)
        start_free = cuda_total_bytes(gpu) - CUDA_CONTEXT_GIB * GIB - non_torch
        pool_bytes = util * start_free - weights
        specs = layer_specs(arch, layers, kv_cache_dtype, tp, max_model_len)
        pool = sglang_pool(specs, pool_bytes, max_model_len, hybrid_swa=arch.model_type not in NO_HYBRID_SWA)
        return util, pool_bytes, pool

    def launch(self, p: Placement, repo: str, gguf_repo: str | None, quantized_repo: str | None) -> Launch:
        plan = p.plan
        assert plan is not None
        checkpoint, how = self.checkpoint(p, repo, quantized_repo)
        parts = [f"python -m sglang.launch_server --model-path {checkpoint}", f"--tp {plan.tensor_parallel}"]
        if plan.pipeline_parallel > 1:
            parts.append(f"--pp-size {plan.pipeline_parallel}")
        parts += [f"--context-length {p.context}", f"--kv-cache-dtype {SGLANG_KV.get(p.kv_cache_dtype, 'auto')}",
                  "--mem-fraction-static 0.88"]
        if plan.nodes > 1:
            parts.append(f"--nnodes {plan.nodes} --node-rank $RANK --dist-init-addr $HEAD:5000")
        return Launch(engine=self.id, command=" \\\n  ".join(parts), nodes=plan.nodes,
                      note=("run on every node with its rank" if plan.nodes > 1 else "single node") + how)

    def rope_flags(self, scaling: dict[str, object]) -> str:
        return f" \\\n  --json-model-override-args '{json.dumps({'rope_scaling': scaling})}'"
