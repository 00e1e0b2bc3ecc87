"""Seed 004's ``gpusNeeded`` table for Kimi K3.1 Pro, recomputed under our rules (one 8,192-token request, BF16 KV
cache; vLLM on data-centre GPUs, llama.cpp elsewhere). Each cell is asserted; every cell that differs from the
seed names the rule that makes the difference (also in docs/placement.md).

How the counts arise (per-GPU budgets from the catalog and engines, weights from ``weightsGiB``; 92 of the 93
layers are MoE layers of ~1/92 of the weights each: BF16 ~56 GiB, Q8_0 ~30 GiB, Q4_K_M ~17 GiB, AWQ ~14.6 GiB):
- vLLM, one machine of 8 (TP 8) holds the model if weights / 8 + buffers < 0.9 x driver memory; beyond it,
  TP 8 per machine and PP = machines: B200 BF16 5,178.6 GiB / 8 = 647 GiB per TP group over 159 GiB of budget
  per GPU = 4.07 -> 5 machines = 40 GPUs (the seed's ladder says 48).
- llama.cpp splits whole layers: a 24 GB card holds one Q4_K_M layer (~17 GiB) and cannot hold a Q8_0 layer
  (~30 GiB); a 96 GB card holds one BF16 layer (56 GiB), three Q8_0 layers or five Q4_K_M layers.
"""

from __future__ import annotations

import json

import pytest
from helpers import FIXTURES

from sizing_core.engines import default_engine
from sizing_core.gpus import get_gpu
from sizing_core.placement.search import fewest_gpus
from sizing_core.registry import load_registered

SEED = json.loads((FIXTURES / "seeds" / "004_kimi-k3.1-pro.json").read_text())["gpusNeeded"]

# Our count per (gpu, column); None = no deployment. Columns as the seed: native (NVFP4), bf16, fp8 ("8-bit":
# FP8 with vLLM, INT8 where FP8 is missing, Q8_0 with llama.cpp), q4_k_m ("4-bit": AWQ with vLLM at its own
# size, Q4_K_M with llama.cpp).
OURS = {
    "rtx-4090": {"native": None, "bf16": None, "fp8": None, "q4_k_m": 92},
    "rtx-5090": {"native": None, "bf16": None, "fp8": 93, "q4_k_m": 92},
    "rtx-pro-6000": {"native": None, "bf16": 92, "fp8": 31, "q4_k_m": 19},
    "mac-m5-max-128": {"native": None, "bf16": 92, "fp8": 31, "q4_k_m": 19},
    "strix-halo": {"native": None, "bf16": 92, "fp8": 31, "q4_k_m": 19},
    "dgx-spark": {"native": None, "bf16": 47, "fp8": 31, "q4_k_m": 16},
    "h100": {"native": 24, "bf16": 88, "fp8": 48, "q4_k_m": 24},
    "h200": {"native": 16, "bf16": 48, "fp8": 24, "q4_k_m": 16},
    "b200": {"native": 16, "bf16": 40, "fp8": 24, "q4_k_m": 16},
}

RULES = {
    "nvfp4-needs-vllm": "llama.cpp cannot load the official NVFP4 checkpoint (seed 003 agrees: 'Not on this "
                        "GPU'; seed 004 gives counts)",
    "whole-layers": "llama.cpp's layer split places whole layers: one MoE layer per card when a layer is larger "
                    "than half the card, so the count is set by the layer size, not total / card",
    "no-fixed-ladder": "we report the exact count; the seed rounds up to 1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128",
    "pp-across-nodes": "vLLM: TP 8 inside each node, PP = number of nodes; a partial last ladder step is not needed",
    "unified-share": "unified-memory machines: the GPU's default share (Mac 75% = 96 GiB, Spark 90% = 115 GiB) "
                     "holds whole layers",
}

WHY = {
    ("rtx-4090", "native"): "nvfp4-needs-vllm", ("rtx-5090", "native"): "nvfp4-needs-vllm",
    ("rtx-pro-6000", "native"): "nvfp4-needs-vllm", ("mac-m5-max-128", "native"): "nvfp4-needs-vllm",
    ("strix-halo", "native"): "nvfp4-needs-vllm", ("dgx-spark", "native"): "nvfp4-needs-vllm",
    ("rtx-4090", "q4_k_m"): "whole-layers", ("rtx-5090", "fp8"): "whole-layers", ("rtx-5090", "q4_k_m"): "whole-layers",
    ("rtx-pro-6000", "bf16"): "whole-layers", ("rtx-pro-6000", "fp8"): "no-fixed-ladder",
    ("rtx-pro-6000", "q4_k_m"): "no-fixed-ladder",
    ("mac-m5-max-128", "bf16"): "whole-layers", ("mac-m5-max-128", "fp8"): "unified-share",
    ("mac-m5-max-128", "q4_k_m"): "unified-share",
    ("strix-halo", "bf16"): "whole-layers", ("strix-halo", "fp8"): "unified-share",
    ("strix-halo", "q4_k_m"): "unified-share",
    ("dgx-spark", "bf16"): "unified-share", ("dgx-spark", "fp8"): "unified-share",
    ("h100", "bf16"): "pp-across-nodes",
    ("b200", "bf16"): "pp-across-nodes",
}

CELLS = [(row["gpu"], col) for row in SEED["gpus"] for col in row["byFormat"]]


@pytest.fixture(scope="module")
def kimi():
    return load_registered("kimi-k3.1-pro")[1]


@pytest.mark.parametrize(("gpu_id", "column"), CELLS)
def test_cell(kimi, gpu_id: str, column: str) -> None:
    gpu = get_gpu(gpu_id)
    engine = default_engine(gpu)
    placed = fewest_gpus(kimi, gpu, engine, engine.substitute_format(column, gpu), context=8192, concurrency=1)
    assert placed.gpus == OURS[gpu_id][column]
    seed = next(r for r in SEED["gpus"] if r["gpu"] == gpu_id)["byFormat"][column]
    if placed.gpus != seed:
        assert WHY[(gpu_id, column)] in RULES, f"{gpu_id}/{column} differs from the seed ({seed}) with no rule"
    else:
        assert (gpu_id, column) not in WHY


def test_scenario_and_engines_match_the_seed() -> None:
    assert SEED["scenario"].startswith("one request of 8192 tokens, BF16 KV cache")
    for row in SEED["gpus"]:
        assert default_engine(get_gpu(row["gpu"])).name == row["engine"]


def test_b200_bf16_uses_five_nodes_with_pp5(kimi) -> None:
    placed = fewest_gpus(kimi, get_gpu("b200"), default_engine(get_gpu("b200")), "bf16")
    assert (placed.gpus, placed.plan.tensor_parallel, placed.plan.pipeline_parallel, placed.plan.nodes) == (40, 8, 5, 5)
