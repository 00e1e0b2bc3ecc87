"""Fewest-GPU plans: hand-derived rules for TP, KV replication, MLA, uneven stages, unified memory, NVFP4."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from helpers import arch

from pipeline.cli.models import load_model
from sizing_core.engines import get_engine
from sizing_core.errors import SizingError
from sizing_core.formats import weight_bytes
from sizing_core.gpus import catalog, get_gpu
from sizing_core.placement.search import _stage_bounds, fewest_gpus, plan_for, valid_tensor_parallel
from sizing_core.units import GIB, MIB

FIXTURES = Path(__file__).parent / "fixtures"
VLLM, LLAMA_CPP = get_engine("vllm"), get_engine("llama.cpp")


def test_catalog_has_the_seed_ids_and_driver_memory() -> None:
    gpus = catalog()
    assert len(gpus) >= 50
    for gpu_id in ("rtx-4090", "rtx-5090", "rtx-pro-6000", "mac-m5-max-128", "strix-halo", "dgx-spark", "h100",
                   "h200", "b200"):
        assert gpu_id in gpus
    assert get_gpu("h100").memory_bytes == 81_559 * MIB
    assert get_gpu("h200-sxm").id == "h200"  # alias from the reference table
    # AMD quotes decimal GB: 288 GB = 268.2 GiB.
    assert get_gpu("mi355x").memory_bytes == 288e9


def test_tp_must_divide_attention_heads() -> None:
    llama70 = arch("meta-llama__Llama-3.1-70B")  # 64 heads, 8 KV heads
    assert valid_tensor_parallel(llama70, 8) and not valid_tensor_parallel(llama70, 3)
    with pytest.raises(SizingError, match="does not divide the attention heads"):
        plan_for(llama70, get_gpu("h100"), VLLM, "bf16", tp=3, pp=1)
    phi4 = arch("microsoft__phi-4")  # 40 heads, 10 KV heads: 8 divides neither 10 nor is divided by it
    assert valid_tensor_parallel(phi4, 2) and not valid_tensor_parallel(phi4, 8)


def test_tp_must_divide_the_heads_of_recurrent_mixers_too() -> None:
    """RWKV-5 World 3B (its config: hidden 2,560, head_size 64 -> 40 heads, tests/fixtures/configs_ii/SOURCES.csv):
    40 heads split over 2, 4, 5, 8 ranks, not over 16 or 3 (the rule used to look at attention and a few recurrent
    kinds only, and let any TP through for RWKV, Mamba, linear attention, short convolutions). Mamba-130m: 1,536
    inner channels (expand 2 x hidden 768): TP 3 divides them, 5 does not."""
    rwkv = load_model(str(FIXTURES / "configs_ii" / "RWKV__rwkv-5-world-3b.json"))
    assert [t for t in (1, 2, 3, 4, 5, 8, 16) if valid_tensor_parallel(rwkv, t)] == [1, 2, 4, 5, 8]
    mamba = load_model(str(FIXTURES / "configs_ii" / "state-spaces__mamba-130m-hf.partial.json"))
    assert valid_tensor_parallel(mamba, 3) and not valid_tensor_parallel(mamba, 5)


def test_kv_heads_replicated_when_tp_exceeds_them() -> None:
    a = arch("nvidia__Qwen3-235B-A22B-NVFP4")  # 4 KV heads
    plan = plan_for(a, get_gpu("b200"), VLLM, "native", tp=8, pp=1, context=8192)
    assert plan is not None
    # TP 8 > 4 KV heads: each rank keeps one whole head, not half: 94 layers x 2 x 1 x 128 x 2 B per token.
    assert plan.stages[0].kv_cache * GIB == pytest.approx(94 * 2 * 1 * 128 * 2 * 8192)


def test_mla_latent_is_replicated_on_every_rank() -> None:
    a = arch("deepseek-ai__DeepSeek-V3")
    plan = plan_for(a, get_gpu("h200"), VLLM, "native", tp=8, pp=1, context=32768)
    assert plan is not None
    assert plan.stages[0].kv_cache * GIB == pytest.approx(61 * 576 * 2 * 32768)  # the whole 2.14 GiB per GPU


def test_uneven_pipeline_stages_and_the_largest_stage_decides() -> None:
    # Five equal layers into two stages: average 2.5 per stage fits a cap of 2.9, but whole layers need 3.
    assert _stage_bounds([1.0] * 5, 0.0, 0.0, 2, cap=2.9) is None
    assert _stage_bounds([1.0] * 5, 0.0, 0.0, 2, cap=3.0) == [3, 2]
    a = arch("meta-llama__Llama-3.1-70B")
    plan = plan_for(a, get_gpu("h100"), VLLM, "bf16", tp=1, pp=3)
    assert plan is not None and sum(plan.layers_per_stage) == 80
    assert sorted(plan.layers_per_stage) != [80 // 3] * 3  # 80 layers cannot split evenly over 3 stages
    assert plan.stages[0].layers[0] == 0 and plan.stages[-1].layers[1] == 79
    assert plan.headroom_gib == pytest.approx(plan.usable_gib - max(s.total for s in plan.stages))


def test_apple_unified_memory_limit() -> None:
    """A 128 GB Mac gives its GPU about 75% (96 GiB) by default: a ~107 GiB model does not fit on one."""
    mac = get_gpu("mac-m4-max-128")
    assert mac.memory_bytes == 0.75 * 128 * GIB
    a = arch("mistralai__Mixtral-8x22B-v0.1")
    weights = weight_bytes(a, "q6_k") / GIB
    assert 96 < weights < 128  # fits in the RAM, not in the GPU's share of it
    placed = fewest_gpus(a, mac, LLAMA_CPP, "q6_k", context=8192)
    assert placed.gpus == 2 and placed.plan.nodes == 2
    smaller = fewest_gpus(a, mac, LLAMA_CPP, "q4_k_m", context=8192)
    assert weight_bytes(a, "q4_k_m") / GIB < 96 - 1 and smaller.gpus == 1


def test_nvfp4_on_hopper_runs_but_is_not_native() -> None:
    a = arch("nvidia__Qwen3-235B-A22B-NVFP4")
    hopper = fewest_gpus(a, get_gpu("h100"), VLLM, "native")
    assert hopper.fits and not hopper.native_support and "Marlin" in hopper.support_note
    blackwell = fewest_gpus(a, get_gpu("b200"), VLLM, "native")
    assert blackwell.native_support
    amd = fewest_gpus(a, get_gpu("mi300x"), VLLM, "native")
    assert amd.gpus is None and not amd.fits
    gguf_engine = fewest_gpus(a, get_gpu("rtx-5090"), LLAMA_CPP, "native")
    assert gguf_engine.gpus is None and "GGUF" in gguf_engine.support_note


def test_single_gpu_memory_breakdown_llama_8b_h100() -> None:
    a = arch("meta-llama__Llama-3.1-8B")
    placed = fewest_gpus(a, get_gpu("h100"), VLLM, "bf16", context=8192, concurrency=4)
    assert placed.gpus == 1 and placed.plan.tensor_parallel == 1
    stage = placed.plan.stages[0]
    assert stage.weights == pytest.approx(weight_bytes(a, "bf16") / GIB)
    assert stage.kv_cache == pytest.approx(4 * 131_072 * 8192 / GIB)  # 4 requests x 1 GiB
    # vLLM's budget: 0.9 x the total CUDA reports, which is 0.46 GiB below nvidia-smi's 81,559 MiB (79.65 GiB)
    assert placed.plan.usable_gib == pytest.approx(0.9 * (81_559 / 1024 - 0.46))


def test_more_than_128_gpus_is_none() -> None:
    a = arch("deepseek-ai__DeepSeek-V4-Pro")
    placed = fewest_gpus(a, get_gpu("rtx-3060-12gb"), LLAMA_CPP, "bf16")
    assert placed.gpus is None and "more than 128" in placed.reason


def test_context_above_model_maximum_is_an_error() -> None:
    a = arch("meta-llama__Llama-3.1-8B")
    with pytest.raises(SizingError, match="above the model's maximum 131,072"):
        fewest_gpus(a, get_gpu("h100"), VLLM, "bf16", context=131_073)


def test_fewest_gpu_count_is_minimal() -> None:
    """One GPU fewer than the answer must not fit under any allowed plan."""
    a = arch("meta-llama__Llama-3.1-70B")
    placed = fewest_gpus(a, get_gpu("rtx-4090"), LLAMA_CPP, "q4_k_m", context=8192)
    n = placed.gpus
    assert n is not None and n > 1
    assert plan_for(a, get_gpu("rtx-4090"), LLAMA_CPP, "q4_k_m", tp=1, pp=n - 1) is None
    # Layer split over n cards: weights / n + per-card buffers must be under 24 GiB, so n >= ceil(39.6 / ~23).
    assert n >= math.ceil(weight_bytes(a, "q4_k_m") / (24 * GIB))


def test_catalog_row_validation_fails_loudly() -> None:
    from importlib import resources

    from sizing_core.gpus import parse_catalog

    text = (resources.files("sizing_core") / "data" / "gpus.csv").read_text()
    header, first, *rest = text.splitlines()
    broken = first.replace(",consumer,12,", ",consumer,-12,")  # rtx-3060-12gb with a negative memory size
    assert broken != first
    with pytest.raises(SizingError, match=r"line 2 \(rtx-3060-12gb\): field 'memory_gb'"):
        parse_catalog("\n".join([header, broken, *rest]))
    with pytest.raises(SizingError, match="duplicate GPU id"):
        parse_catalog("\n".join([header, first, first]))
