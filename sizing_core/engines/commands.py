"""What a launch command is made of: the record, the names engines give formats and KV dtypes, and the checkpoint
a server loads.

A command names a quantized checkpoint only when one is known to exist (``gguf_repo``: a GGUF repo holding that quant
type, e.g. from the Hub ingestion's listings; ``quantized_repo`` likewise for AWQ / INT8 / NVFP4 checkpoints);
otherwise it points at a local file or folder and the note says how to make it (``<repo>-GGUF`` guessed often does
not exist)."""

from __future__ import annotations

from ..plan import Placement
from ..record import CamelRecord, record

VLLM_KV = {"bf16": "auto", "fp16": "auto", "fp8": "fp8"}
SGLANG_KV = {"bf16": "auto", "fp16": "auto", "fp8": "fp8_e4m3"}
GGUF_NAMES = {"q8_0": "Q8_0", "q6_k": "Q6_K", "q5_k_m": "Q5_K_M", "q4_k_m": "Q4_K_M", "iq4_xs": "IQ4_XS",
              "q3_k_m": "Q3_K_M", "q2_k": "Q2_K", "bf16": "BF16", "fp16": "F16", "mxfp4": "MXFP4"}


@record
class Launch(CamelRecord):
    engine: str
    command: str
    nodes: int
    note: str


#: formats vLLM/SGLang load only from a checkpoint quantized that way (FP8 they quantize at load time)
PREQUANTIZED = {"awq_int4": ("AWQ", "llm-compressor (W4A16) or AutoAWQ"),
                "int8": ("INT8 W8A8", "llm-compressor (W8A8)"),
                "nvfp4": ("NVFP4", "NVIDIA ModelOpt (hf_ptq --qformat nvfp4) or llm-compressor (NVFP4)")}


def checkpoint(p: Placement, repo: str, quantized_repo: str | None) -> tuple[str, str]:
    """What vLLM/SGLang load and what to know about it: the repo itself, a known quantized repo, or a folder to
    make (and how)."""
    made = PREQUANTIZED.get(p.format)
    if made is None or quantized_repo:
        return quantized_repo or repo, ""
    name, tool = made
    folder = f"./{repo.rsplit('/', 1)[-1]}-{name.split()[0]}"
    return folder, (f"; no {name} checkpoint of {repo} is known: make {folder} from {repo} with {tool}, or pick "
                    f"a published one")
