"""Launch commands derived from a placement: ``vllm serve``, SGLang's server, ``llama-server``."""

from __future__ import annotations

from .placement import Placement
from .record import CamelRecord, record

_VLLM_KV = {"bf16": "auto", "fp16": "auto", "fp8": "fp8"}
_SGLANG_KV = {"bf16": "auto", "fp16": "auto", "fp8": "fp8_e4m3"}
_GGUF_NAMES = {"q8_0": "Q8_0", "q6_k": "Q6_K", "q5_k_m": "Q5_K_M", "q4_k_m": "Q4_K_M", "iq4_xs": "IQ4_XS",
               "q3_k_m": "Q3_K_M", "q2_k": "Q2_K", "bf16": "BF16", "fp16": "F16", "mxfp4": "MXFP4"}


@record
class Launch(CamelRecord):
    engine: str
    command: str
    nodes: int
    note: str


def launch_command(p: Placement, repo: str, gguf_repo: str | None = None) -> Launch | None:
    plan = p.plan
    if plan is None:
        return None
    if p.engine == "vllm":
        parts = [f"vllm serve {repo}", f"--tensor-parallel-size {plan.tensor_parallel}"]
        if plan.pipeline_parallel > 1:
            parts.append(f"--pipeline-parallel-size {plan.pipeline_parallel}")
        parts += [f"--max-model-len {p.context}", f"--max-num-seqs {max(p.concurrency, 1)}",
                  f"--kv-cache-dtype {_VLLM_KV.get(p.kv_cache_dtype, 'auto')}", "--gpu-memory-utilization 0.90"]
        if p.format == "fp8" and not repo.lower().endswith("fp8"):
            parts.append("--quantization fp8")
        note = "one Ray cluster over all nodes (ray start on each), then run this on the head node" \
            if plan.nodes > 1 else "single node"
        return Launch(engine="vllm", command=" \\\n  ".join(parts), nodes=plan.nodes, note=note)
    if p.engine == "sglang":
        parts = [f"python -m sglang.launch_server --model-path {repo}", f"--tp {plan.tensor_parallel}"]
        if plan.pipeline_parallel > 1:
            parts.append(f"--pp-size {plan.pipeline_parallel}")
        parts += [f"--context-length {p.context}", f"--kv-cache-dtype {_SGLANG_KV.get(p.kv_cache_dtype, 'auto')}",
                  "--mem-fraction-static 0.88"]
        if plan.nodes > 1:
            parts.append(f"--nnodes {plan.nodes} --node-rank $RANK --dist-init-addr $HEAD:5000")
        return Launch(engine="sglang", command=" \\\n  ".join(parts), nodes=plan.nodes,
                      note="run on every node with its rank" if plan.nodes > 1 else "single node")
    quant = _GGUF_NAMES.get(p.weight_format, p.weight_format.upper())
    source = f"-hf {gguf_repo or repo + '-GGUF'}:{quant}"
    parts = [f"llama-server {source}", f"--ctx-size {p.context * p.concurrency}", f"--parallel {p.concurrency}",
             "-ngl 999", "--flash-attn on"]
    if p.kv_cache_dtype in ("q8_0", "q4_0"):
        parts.append(f"-ctk {p.kv_cache_dtype} -ctv {p.kv_cache_dtype}")
    if plan.nodes > 1:
        parts.append("--rpc " + ",".join(f"host{i}:50052" for i in range(1, plan.nodes)))
    note = (f"layer split over {plan.gpus} devices" + (f" on {plan.nodes} machines (rpc-server on the others)"
                                                        if plan.nodes > 1 else ""))
    return Launch(engine=p.engine, command=" \\\n  ".join(parts), nodes=plan.nodes, note=note)
