"""``runsWith``: the engines that can serve a model, derived per model as seed 004 does.

An engine serves a model when (1) it implements every layer kind of the architecture and (2) it loads the
checkpoint's native format on at least one GPU of the catalog (``sizing_core.engines`` support matrix: llama.cpp
needs a GGUF conversion for FP8/NVFP4/INT4 checkpoints, so it is left out for them). MLX is not listed: seed 004's
vocabulary is vLLM, SGLang and llama.cpp.

Layer kinds per engine, from the engines' model implementations (read in their public repositories):
- vLLM ``vllm/model_executor/models/``: llama/mixtral/qwen3 (full, sliding, chunked in llama4), deepseek_v2 (MLA),
  deepseek V3.2+/V4 (compressed sparse attention), kimi_linear.py (Kimi Delta Attention), qwen3_next (Gated
  DeltaNet), nemotron_h (Mamba2), nemotron_nas (DeciLM no-op / linear replacements).
- SGLang ``python/sglang/srt/models/``: the same families (kimi_linear, qwen3_next, deepseek_v4, nemotron_h, ...).
- llama.cpp ``src/models/``: deepseek2 (MLA), deepseek4 (compressed sparse attention), kimi-linear.cpp,
  delta-net-base.cpp (Gated DeltaNet), graph-context-mamba.cpp (Mamba2), deci.cpp (linear replacements).
"""

from __future__ import annotations

from sizing_core import Architecture
from sizing_core.engines import ENGINES
from sizing_core.gpus import catalog


def layer_kinds(arch: Architecture) -> set[str]:
    return {layer.mixer.kind if layer.mixer else "none" for layer in arch.layers}


def runs_with(arch: Architecture) -> list[str]:
    """Display names of the engines that implement the architecture and load its native checkpoint somewhere."""
    kinds = layer_kinds(arch)
    gpus = list(catalog().values())
    out = []
    for engine in ENGINES.values():
        implemented = engine.layer_kinds  # None: the engine is not claimed for any architecture
        if implemented is not None and kinds <= implemented and any(engine.supports(gpu, "native", arch).runs for gpu in gpus):
            out.append(engine.name)
    return sorted(out)
