"""Launch commands derived from a placement: ``vllm serve``, SGLang's server, ``llama-server``.

A command names a quantized checkpoint only when one is known to exist (``gguf_repo``: a GGUF repo holding that quant
type, e.g. from the Hub ingestion's listings; ``quantized_repo`` likewise for AWQ / INT8 / NVFP4 checkpoints);
otherwise it points at a local file or folder and the note says how to make it (issue #23: ``<repo>-GGUF`` was
guessed and often does not exist)."""

from __future__ import annotations

from typing import Any

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


#: formats vLLM/SGLang load only from a checkpoint quantized that way (FP8 they quantize at load time)
_PREQUANTIZED = {"awq_int4": ("AWQ", "llm-compressor (W4A16) or AutoAWQ"),
                 "int8": ("INT8 W8A8", "llm-compressor (W8A8)"),
                 "nvfp4": ("NVFP4", "NVIDIA ModelOpt (hf_ptq --qformat nvfp4) or llm-compressor (NVFP4)")}


def _checkpoint(p: Placement, repo: str, quantized_repo: str | None) -> tuple[str, str]:
    """What vLLM/SGLang load and what to know about it: the repo itself, a known quantized repo, or a folder to
    make (and how)."""
    made = _PREQUANTIZED.get(p.format)
    if made is None or quantized_repo:
        return quantized_repo or repo, ""
    name, tool = made
    folder = f"./{repo.rsplit('/', 1)[-1]}-{name.split()[0]}"
    return folder, (f"; no {name} checkpoint of {repo} is known: make {folder} from {repo} with {tool}, or pick "
                    f"a published one")


def known_sources(p: Placement, repo: str, native_format: str,
                  gguf_files: dict[str, dict[str, Any]] | None) -> dict[str, str | None]:
    """The ``gguf_repo`` / ``quantized_repo`` arguments of :func:`launch_command` from what is known to exist: the
    GGUF repos a model's Hub revision lists by quant type (``HubModel.gguf_files``: ``{"Q4_K_M": {"repo": ...}}``)
    and the repo itself when the checkpoint is already stored in the plan's format."""
    quant = _GGUF_NAMES.get(p.weight_format, p.weight_format.upper())
    gguf = (gguf_files or {}).get(quant) or next((v for k, v in (gguf_files or {}).items() if k.upper() == quant),
                                                  None)
    own = repo if p.format == "native" or p.weight_format == native_format else None
    return {"gguf_repo": gguf.get("repo") if gguf else None, "quantized_repo": own}


def launch_command(p: Placement, repo: str, gguf_repo: str | None = None,
                   quantized_repo: str | None = None) -> Launch | None:
    plan = p.plan
    if plan is None:
        return None
    if p.engine in ("vllm", "sglang"):
        checkpoint, how = _checkpoint(p, repo, quantized_repo)
    if p.engine == "vllm":
        parts = [f"vllm serve {checkpoint}", f"--tensor-parallel-size {plan.tensor_parallel}"]
        if plan.pipeline_parallel > 1:
            parts.append(f"--pipeline-parallel-size {plan.pipeline_parallel}")
        parts += [f"--max-model-len {p.context}", f"--max-num-seqs {max(p.concurrency, 1)}",
                  f"--kv-cache-dtype {_VLLM_KV.get(p.kv_cache_dtype, 'auto')}", "--gpu-memory-utilization 0.90"]
        if p.format == "fp8" and not repo.lower().endswith("fp8"):
            parts.append("--quantization fp8")
        note = "one Ray cluster over all nodes (ray start on each), then run this on the head node" \
            if plan.nodes > 1 else "single node"
        return Launch(engine="vllm", command=" \\\n  ".join(parts), nodes=plan.nodes, note=note + how)
    if p.engine == "sglang":
        parts = [f"python -m sglang.launch_server --model-path {checkpoint}", f"--tp {plan.tensor_parallel}"]
        if plan.pipeline_parallel > 1:
            parts.append(f"--pp-size {plan.pipeline_parallel}")
        parts += [f"--context-length {p.context}", f"--kv-cache-dtype {_SGLANG_KV.get(p.kv_cache_dtype, 'auto')}",
                  "--mem-fraction-static 0.88"]
        if plan.nodes > 1:
            parts.append(f"--nnodes {plan.nodes} --node-rank $RANK --dist-init-addr $HEAD:5000")
        return Launch(engine="sglang", command=" \\\n  ".join(parts), nodes=plan.nodes,
                      note=("run on every node with its rank" if plan.nodes > 1 else "single node") + how)
    quant = _GGUF_NAMES.get(p.weight_format, p.weight_format.upper())
    local = f"{repo.rsplit('/', 1)[-1]}-{quant}.gguf"
    source = f"-hf {gguf_repo}:{quant}" if gguf_repo else f"-m {local}"
    parts = [f"llama-server {source}", f"--ctx-size {p.context * p.concurrency}", f"--parallel {p.concurrency}",
             "-ngl 999", "--flash-attn on"]
    if p.kv_cache_dtype in ("q8_0", "q4_0"):
        parts.append(f"-ctk {p.kv_cache_dtype} -ctv {p.kv_cache_dtype}")
    if plan.nodes > 1:
        parts.append("--rpc " + ",".join(f"host{i}:50052" for i in range(1, plan.nodes)))
    note = (f"layer split over {plan.gpus} devices" + (f" on {plan.nodes} machines (rpc-server on the others)"
                                                        if plan.nodes > 1 else ""))
    if not gguf_repo:
        note += (f"; no GGUF of {repo} in {quant} is known: make {local} with llama.cpp: python convert_hf_to_gguf.py "
                 f"<{repo} checkout> --outtype bf16 --outfile model-BF16.gguf"
                 + (f", then llama-quantize model-BF16.gguf {local} {quant}" if quant not in ("BF16", "F16") else ""))
    return Launch(engine=p.engine, command=" \\\n  ".join(parts), nodes=plan.nodes, note=note)
