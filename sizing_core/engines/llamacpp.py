"""llama.cpp (and Ollama, which runs it): GGUF weights, a layer split over devices and machines, per device the
model buffer, the KV and recurrent buffers of ``n_ctx`` cells and the compute buffer (``src/llama-context.cpp``).
"""

from __future__ import annotations

import math
from typing import ClassVar

from ..architecture import Architecture
from ..formats import GGUF_MIXES
from ..gpus import GPU
from ..kv_layout import Pool, layer_specs, llamacpp_pool
from ..plan import Placement
from ..units import GIB
from .base import Engine, Scheduler, Support
from .commands import GGUF_NAMES, Launch
from .memory import LLAMACPP_COMPUTE_HIDDEN, LLAMACPP_CONTEXT_GIB, cuda_total_bytes
from .server import SERVED_LAYER_KINDS

#: checkpoints a GGUF runner loads as stored (anything else needs a conversion)
LOADS_AS_STORED = ("bf16", "fp16", "fp32", "mxfp4")
DEFAULT_UBATCH = 512


class LlamaCpp(Engine):
    """llama.cpp: device memory minus a fixed context and the compute buffer; ``n_ctx`` cells shared by the
    ``--parallel`` slots."""

    speed_family: ClassVar[str] = "llama.cpp"
    fp16_accumulate_on_geforce: ClassVar[bool] = True
    joins_machines_over_rpc: ClassVar[bool] = True
    layer_kinds: ClassVar[frozenset[str] | None] = SERVED_LAYER_KINDS | {"mamba"}
    compact_kv_dtype: ClassVar[str | None] = "q8_0"

    def runs_on(self, gpu: GPU) -> bool:
        """Every consumer, workstation and unified-memory GPU (CUDA, ROCm, Vulkan, Metal builds) and the NVIDIA and
        AMD data-centre cards; not the data-centre accelerators without a llama.cpp backend (Gaudi, TPU, ...)."""
        return gpu.kind != "datacenter" or gpu.is_nvidia or gpu.is_amd_instinct

    def scheduler(self, gpu: GPU) -> Scheduler:
        """``n_ubatch`` rows per step (512 unless set); the slots (``--parallel``) are the concurrency asked."""
        return Scheduler(max_num_seqs=self.max_num_seqs,
                         max_num_batched_tokens=self.max_num_batched_tokens or DEFAULT_UBATCH)

    def usable_bytes(self, gpu: GPU, tp: int = 1) -> float:
        """The device (unified memory: its GPU share) minus a fixed context."""
        return gpu.memory_bytes * (self.memory_fraction or 1.0) - self.fixed_overhead_gib * GIB

    def overhead_bytes(self, gpu: GPU, tp: int = 1) -> float:
        return self.fixed_overhead_gib * GIB

    def activation(self, arch: Architecture, gpu: GPU, tp: int, max_model_len: int | None = None
                   ) -> tuple[float, int, int]:
        """The compute buffer: ``n_ubatch`` rows of logits and activations in float32."""
        ubatch = self.max_num_batched_tokens or DEFAULT_UBATCH
        return ubatch * 4 * (arch.vocab_size + LLAMACPP_COMPUTE_HIDDEN * arch.hidden_size), ubatch, 0

    def kv_pool(self, arch: Architecture, gpu: GPU, layers: range, weights: float, tp: int, stages: int,
                activation: tuple[float, int, int], non_torch: float, max_model_len: int, kv_cache_dtype: str,
                concurrency: int) -> tuple[float, float, Pool]:
        """``n_ctx = max_model_len x concurrency`` cells in F16 (BF16 asked: F16), recurrent state in float32."""
        specs = layer_specs(arch, layers, kv_cache_dtype if kv_cache_dtype != "bf16" else "fp16", 1,
                            max_model_len, state_f32=True)
        n_ctx = max_model_len * concurrency
        kv, state = llamacpp_pool(specs, n_ctx, concurrency, self.max_num_batched_tokens or DEFAULT_UBATCH)
        pool_bytes = kv + state
        free = cuda_total_bytes(gpu) - LLAMACPP_CONTEXT_GIB * GIB - weights - activation[0]
        per_request = pool_bytes / concurrency if concurrency else 0.0
        conc = free / per_request if per_request > 0 else math.inf
        pool = Pool(tokens=n_ctx, max_concurrency=conc, request_bytes=per_request, block_size=256, groups=1,
                    note="n_ctx cells" if free >= pool_bytes else "does not fit: weights + KV + compute > memory")
        return 1.0, pool_bytes, pool

    def refuses_checkpoint(self, arch: Architecture) -> Support | None:
        if arch.native.weight_format not in LOADS_AS_STORED:
            return Support(runs=False, native=False,
                           note=f"{self.name} cannot load the {arch.native.weight_format} checkpoint; "
                                "it needs a GGUF/MLX conversion")
        return None

    def supports_format(self, gpu: GPU, fmt: str, arch: Architecture | None) -> Support:
        if gpu.kind == "datacenter" and not (gpu.is_nvidia or gpu.vendor == "AMD"):
            return Support(runs=False, native=False, note=f"llama.cpp has no backend for {gpu.vendor} accelerators")
        if fmt in GGUF_MIXES or fmt in ("bf16", "fp16"):
            return Support(runs=True, native=True, note="GGUF")
        if fmt == "mxfp4":
            native = bool(gpu.supports_mxfp4)
            return Support(runs=True, native=native, note="GGUF MXFP4" + ("" if native else " (dequantizing kernels)"))
        return Support(runs=False, native=False, note=f"llama.cpp has no {fmt} weights; use a GGUF type such as q8_0")

    def substitute_format(self, fmt: str, gpu: GPU) -> str:
        """8-bit is Q8_0, 4-bit is Q4_K_M."""
        return {"fp8": "q8_0", "int8": "q8_0", "awq_int4": "q4_k_m", "nvfp4": "q4_k_m"}.get(fmt, fmt)

    def layer_cost_key(self) -> str:
        """Builds of 2024 and earlier (``b<build>`` below 4400, or a year before 2025) pay more per layer."""
        text = (self.version or "").lower()
        if text.startswith("b") and text[1:].isdigit():
            old = int(text[1:]) < 4400
        else:
            old = text.isdigit() and int(text) < 2025
        return "llama.cpp-2024" if old else "llama.cpp"

    def launch(self, p: Placement, repo: str, gguf_repo: str | None, quantized_repo: str | None) -> Launch:
        """``llama-server`` over a GGUF file: a known GGUF repo, else a local file and how to make it."""
        plan = p.plan
        assert plan is not None
        quant = GGUF_NAMES.get(p.weight_format, p.weight_format.upper())
        local = f"{repo.rsplit('/', 1)[-1]}-{quant}.gguf"
        source = f"-hf {gguf_repo}:{quant}" if gguf_repo else f"-m {local}"
        parts = [f"llama-server {source}", f"--ctx-size {p.context * p.concurrency}", f"--parallel {p.concurrency}",
                 "-ngl 999", "--flash-attn on"]
        if p.kv_cache_dtype in ("q8_0", "q4_0"):
            parts.append(f"-ctk {p.kv_cache_dtype} -ctv {p.kv_cache_dtype}")
        if plan.nodes > 1:
            parts.append("--rpc " + ",".join(f"host{i}:50052" for i in range(1, plan.nodes)))
        note = (f"layer split over {plan.gpus} device{'s' if plan.gpus != 1 else ''}"
                + (f" on {plan.nodes} machines (rpc-server on the others)" if plan.nodes > 1 else ""))
        if not gguf_repo:  # a 16-bit GGUF is the conversion's own output; any other is quantized from it
            convert = f"python convert_hf_to_gguf.py <{repo} checkout> --outtype"
            note += (f"; no GGUF of {repo} in {quant} is known: make {local} with llama.cpp: "
                     + (f"{convert} {quant.lower()} --outfile {local}" if quant in ("BF16", "F16") else
                        f"{convert} bf16 --outfile model-BF16.gguf, then llama-quantize model-BF16.gguf {local} "
                        f"{quant}"))
        return Launch(engine=self.id, command=" \\\n  ".join(parts), nodes=plan.nodes, note=note)

    def rope_flags(self, scaling: dict[str, object]) -> str:
        return (f" \\\n  --rope-scaling {scaling['rope_type']} --rope-scale {scaling['factor']:g}"
                + (f" --yarn-orig-ctx {scaling['original_max_position_embeddings']}"
                   if scaling["original_max_position_embeddings"] else ""))
