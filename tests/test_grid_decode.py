"""The sizing grid's decode speed is the engine model's ('s calibrated ``sizing_core.engines.speed``), not
a bare roofline: the grid used ``bandwidth x 0.8 / (active bytes / TP + cache)``, with no per-layer costs, no MoE
routing or latent-attention kernels, no all-reduces under TP and the whole cache on every GPU of a TP group, so its
MoE rows under TP were many times faster than fit's and the setups' figures for the same plan."""

from __future__ import annotations

import polars as pl
import pytest
from helpers import all_config_names, arch

from pipeline.compute.grid import compute_grid
from sizing_core.engines import ENGINES
from sizing_core.engines.speed import ALLREDUCE_US, LAYER_US, MOE_LAYER_US, decode_step
from sizing_core.gpus import catalog
from sizing_core.placement.search import fewest_gpus
from sizing_core.units import GB

GPUS = ("rtx-4090", "rtx-pro-6000", "mac-m4-max-128", "h100", "h100-pcie", "b200", "mi300x", "l40s", "a100-80gb-sxm")


@pytest.fixture(scope="module")
def models() -> dict:
    return {name: arch(name) for name in all_config_names()}


@pytest.fixture(scope="module")
def grid(models: dict) -> pl.DataFrame:
    return compute_grid({k: ("r", v) for k, v in models.items()}, [catalog()[g] for g in GPUS])


def test_grid_decode_equals_the_engine_models_on_the_planners_plan(models: dict, grid: pl.DataFrame) -> None:
    """Every bundled model x 9 GPUs x every engine x 5 formats x 3 contexts: the grid's plan is the planner's (same
    GPU count and TP) and its decode speed is ``1000 / decode_step(...).total_ms`` of that plan, to the last bit:
    both are ``engines.speed.decode_ms`` of the same terms (the grid's on columns). Before, the grid's count was a
    closed form and its TP the engine's default layout for that count, so cells whose plan differed were not
    compared."""
    cells = grid.filter(pl.col("context").is_in([4096, 131072, 1048576])
                        & pl.col("format").is_in(["native", "bf16", "fp8", "q4_k_m", "awq_int4"])
                        & pl.col("decode_tokens_per_s").is_not_null())
    compared, wrong = 0, []
    for row in cells.iter_rows(named=True):
        model, gpu, engine = models[row["model_id"]], catalog()[row["gpu_id"]], ENGINES[row["engine"]]
        placed = fewest_gpus(model, gpu, engine, row["format"], context=row["context"])
        plan = placed.plan
        step = decode_step(model, gpu, engine, row["format"], plan.tensor_parallel, plan.pipeline_parallel,
                           row["context"], 1, "bf16", placed.native_support, plan.nodes)
        compared += 1
        if placed.gpus != row["est_gpus"] or row["decode_tokens_per_s"] != 1000 / step.total_ms:
            wrong.append((row["model_id"], row["gpu_id"], row["engine"], row["format"], row["context"]))
    assert compared > 5000
    assert not wrong, (len(wrong), wrong[:5])


def test_moe_decode_under_tp_by_hand(grid: pl.DataFrame) -> None:
    """Qwen3-30B-A3B (its config: 48 layers, hidden 2,048, 32 query and 4 KV heads of 128, 128 experts of 768, top 8,
    vocabulary 151,936, untied) in BF16 on L40S (48 GB, 864 GB/s GDDR6, PCIe: the GPU facts table) with vLLM at 8K:
    ~61 GB of weights take 2 GPUs, TP 2. By hand from engines.speed's constants: the step reads the dense weights and
    8/128 of the routed experts (these at 0.805 of the dense efficiency), half of each on each GPU, plus the 8K-token
    cache of 2 of the 4 KV heads, at 1.0 x 864 GB/s (GDDR); fixed: 48 x (52.3 + 18.4 + 2 x 25) us = 5.7936 ms. The
    old grid formula (0.8 x bandwidth over active bytes / 2 + the whole cache, nothing fixed) gave ~2x this."""
    name = "Qwen__Qwen3-30B-A3B"
    row = grid.filter((pl.col("model_id") == name) & (pl.col("gpu_id") == "l40s") & (pl.col("engine") == "vllm")
                      & (pl.col("format") == "bf16") & (pl.col("context") == 8192))
    l40s = catalog()["l40s"]
    assert (l40s.bandwidth_gbs, l40s.memory_kind) == (864.0, "GDDR6") and "no nvlink" in l40s.interconnect.lower()
    layers, hidden, heads, kv_heads, head_dim, vocab = 48, 2048, 32, 4, 128, 151_936
    moe_intermediate, experts, top_k = 768, 128, 8
    attn = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim + 2 * head_dim  # q, o; k, v; q/k norms
    dense = layers * (attn + hidden * experts + 2 * hidden) + hidden + vocab * hidden  # + router, norms; lm_head
    routed = layers * experts * 3 * hidden * moe_intermediate * top_k / experts
    cache = 2 * layers * (kv_heads // 2) * head_dim * 8192  # K and V of 2 heads per GPU, 8,192 tokens
    per_gpu_bytes = 2 * ((dense + routed / 0.805) / 2 + cache)  # BF16: 2 bytes
    bandwidth_ms = per_gpu_bytes / (864 * GB * 1.0) * 1000
    fixed_ms = (layers * LAYER_US["server"] + layers * MOE_LAYER_US + 2 * layers * ALLREDUCE_US["pcie"]) / 1000
    assert fixed_ms == pytest.approx(5.7936, abs=1e-4)
    assert row["est_gpus"].item() == 2
    assert row["decode_tokens_per_s"].item() == pytest.approx(1000 / (bandwidth_ms + fixed_ms), rel=1e-4)
    old = 864 * GB * 0.8 / (2 * (dense + routed) / 2 + 2 * 2 * layers * kv_heads * head_dim * 8192)
    assert old / row["decode_tokens_per_s"].item() > 1.8


@pytest.mark.parametrize("batch", [1, 4, 64])
def test_moe_step_bytes_by_hand_at_batch(batch: int) -> None:
    """The weight bytes a decode step of ``batch`` sequences reads, Qwen3-30B-A3B in BF16 (its config, as above):
    every dense tensor once, one embedding row per sequence, and of each layer's 128 experts the expected number
    the batch's tokens pick, 128 x (1 - (1 - 8/128)^batch) (each token picks 8 of 128, independently). The speed
    model keeps these per kind instead of per tensor; the sum must not change."""
    from sizing_core.roofline import _expert_step_bytes, _step_bytes

    layers, hidden, heads, kv_heads, head_dim, vocab = 48, 2048, 32, 4, 128, 151_936
    moe_intermediate, experts, top_k = 768, 128, 8
    attn = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim + 2 * head_dim
    dense = layers * (attn + hidden * experts + 2 * hidden) + hidden + vocab * hidden
    picked = experts * (1 - (1 - top_k / experts) ** batch)
    routed = layers * picked * 3 * hidden * moe_intermediate
    model = arch("Qwen__Qwen3-30B-A3B")
    assert _expert_step_bytes(model, "bf16", batch) == pytest.approx(2 * routed, rel=1e-12)
    assert _step_bytes(model, "bf16", batch) == pytest.approx(2 * (dense + batch * hidden + routed), rel=1e-12)


def test_grid_decode_counts_the_compute_term_where_it_binds() -> None:
    """DeepSeek-V3 in Q2_K at 128K on an H20 (141 GB, 4.8 TB/s, 148 dense TFLOPS) with llama.cpp: one request's
    attention over 128K cached tokens takes longer at the engine's MFU than streaming the step's bytes, so the step
    is compute-bound. The grid once left the compute term out (it claimed the bandwidth term always dominates at
    one request) and published 50.7 tokens/s here; it is now ``decode_step``'s 32.2."""
    model, gpu, engine = arch("deepseek-ai__DeepSeek-V3"), catalog()["h20-141gb"], ENGINES["llama.cpp"]
    row = compute_grid({"dsv3": ("r", model)}, [gpu]).filter(
        (pl.col("format") == "q2_k") & (pl.col("context") == 131072) & (pl.col("engine") == "llama.cpp"))
    placed = fewest_gpus(model, gpu, engine, "q2_k", context=131072)
    assert placed.gpus == row["est_gpus"].item()
    plan = placed.plan
    step = decode_step(model, gpu, engine, "q2_k", plan.tensor_parallel, plan.pipeline_parallel, 131072, 1, "bf16",
                       placed.native_support, plan.nodes)
    assert step.compute_ms > 1.5 * step.bandwidth_ms
    assert row["decode_tokens_per_s"].item() == 1000 / step.total_ms == pytest.approx(32.2, abs=0.1)


def test_grid_step_bytes_equal_the_speed_models_for_every_model_and_format(models: dict) -> None:
    """The weight bytes a decode step of one request reads and their routed-expert part, per model and format:
    the grid's columnar sums (``grid_bytes._step_terms``) are ``roofline._step_bytes`` / ``_expert_step_bytes``,
    to the last bit."""
    from pipeline.compute.grid_bytes import format_figures
    from sizing_core.roofline import _expert_step_bytes, _step_bytes

    figures = format_figures(models)
    wrong = [(r["model_id"], r["format"]) for r in figures.iter_rows(named=True)
             if r["step_bytes"] is not None and not (models[r["model_id"]].native.unsupported and r["format"] == "native")
             and (r["step_bytes"], r["expert_step_bytes"]) != (_step_bytes(models[r["model_id"]], r["format"], 1),
                                                               _expert_step_bytes(models[r["model_id"]], r["format"], 1))]
    assert figures.height > 500 and not wrong, wrong[:5]
