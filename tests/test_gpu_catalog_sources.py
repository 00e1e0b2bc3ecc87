"""The GPU catalog's speed facts: every row has a memory bandwidth or says why not, and a filled figure flows
into throughput as the roofline says (session 3: 24 rented GPUs had no bandwidth, so every setup on them
published null tok/s and null $/1M tokens).

Figures here are the cited ones (each row's ``source`` column names the page), not the code's output.
"""

from __future__ import annotations

import pytest
from helpers import arch

from sizing_core.engines import get_engine
from sizing_core.engines.speed import BANDWIDTH_EFFICIENCY, LAYER_US
from sizing_core.gpus import catalog, get_gpu
from sizing_core.placement.search import Placement, plan_for
from sizing_core.throughput import estimate

NO_BANDWIDTH = "no bandwidth figure found"


def test_every_gpu_has_a_bandwidth_or_says_why_not() -> None:
    """A blank bandwidth silently nulls tok/s and $/1M tokens for every setup on that GPU: it must be a stated
    gap, not an unfinished row."""
    unexplained = sorted(g.id for g in catalog().values()
                         if g.bandwidth_gbs is None and NO_BANDWIDTH not in g.source)
    assert unexplained == []


def test_no_row_is_left_unfinished() -> None:
    assert [g.id for g in catalog().values() if "not collected yet" in g.source] == []


@pytest.mark.parametrize(("gpu_id", "bandwidth_gbs"), [
    # NVIDIA's A6000/A5000/A4000 table (hardwareluxx) and the A4000 datasheet copy (ecer.com)
    ("rtx-a4000", 448), ("rtx-a5000", 768),
    # L40 table (mullet.se), A10 (baseten, gpu-specs), A100 80GB PCIe (llm-analysis, gpu-specs), V100 SXM2
    ("l40", 864), ("a10", 600), ("a100-80gb-pcie", 1935), ("v100", 900),
    # GeForce: bus width x data rate / 8 as the cited pages give them
    ("rtx-3070", 448), ("rtx-3080", 760), ("rtx-3090-ti", 1008), ("rtx-4060", 272), ("rtx-4070", 504),
])
def test_filled_bandwidths_are_the_cited_figures(gpu_id: str, bandwidth_gbs: float) -> None:
    gpu = get_gpu(gpu_id)
    assert gpu.bandwidth_gbs == bandwidth_gbs
    assert f"{bandwidth_gbs}" in gpu.source  # the row says where the figure comes from


def test_bandwidths_follow_bus_width_times_data_rate() -> None:
    """Sanity against the memory configuration (an odd figure is a bug until a source proves it): GDDR bandwidth
    = bus bits x Gbps per pin / 8, with the bus widths and data rates the cited pages (or their TechPowerUp data)
    give."""
    expected = {"rtx-a4000": 256 * 14 / 8, "rtx-a5000": 384 * 16 / 8, "rtx-3080": 320 * 19 / 8,
                "rtx-3090-ti": 384 * 21 / 8, "rtx-4070-ti": 192 * 21 / 8, "rtx-3060-ti": 256 * 14 / 8,
                "rtx-a2000": 192 * 12 / 8, "rtx-4060": 128 * 17 / 8}
    assert {g: get_gpu(g).bandwidth_gbs for g in expected} == pytest.approx(expected)


def test_llama_8b_bf16_decode_on_rtx_a5000_is_the_roofline_by_hand() -> None:
    """Decode step = bytes read per token / (bandwidth x efficiency) + the fixed per-layer cost, computed by hand
    from the cited 768 GB/s (engines.speed: GDDR efficiency 1.0 and 52.3 us per layer for vLLM, both fitted on the
    calibration set, docs/calibration.md).

    Llama-3.1-8B (32 layers, hidden 4096, 32 heads / 8 KV heads of 128, MLP 14336, vocab 128256, untied):
    per layer q,o 4096x4096 + k,v 4096x1024 + 3 MLP 4096x14336 + 2 norms = 218,112,000 parameters; x32 =
    6,979,584,000; + final norm 4096 + lm_head 525,336,576 = 7,504,924,672 read in full at 2 bytes
    = 15,009,849,344 B, plus one embedding row (4096 x 2 B). KV cache of one 4,096-token request:
    32 layers x 2 x 8 x 128 x 2 B x 4096 = 536,870,912 B. One GPU, TP 1 (no all-reduce loss).
    """
    a = arch("meta-llama__Llama-3.1-8B")
    gpu = get_gpu("rtx-a5000")
    vllm = get_engine("vllm")
    plan = plan_for(a, gpu, vllm, "bf16", tp=1, pp=1, context=4096, concurrency=1)
    assert plan is not None  # 16 GB of weights in the A5000's 24,564 MiB
    placement = Placement(gpu=gpu.id, engine="vllm", format="bf16", weight_format="bf16", context=4096,
                          concurrency=1, kv_cache_dtype="bf16", fits=True, gpus=1, native_support=True,
                          support_note="", plan=plan)
    speed = estimate(a, gpu, vllm, placement)
    bytes_per_token = 2 * 7_504_924_672 + 4096 * 2 + 32 * 2 * 8 * 128 * 2 * 4096
    assert BANDWIDTH_EFFICIENCY["gddr"] == 1.0 and LAYER_US["server"] == 52.3
    step_s = bytes_per_token / (768e9 * 1.0) + 32 * 52.3e-6  # 20.243 ms + 1.674 ms
    assert speed.decode_tokens_per_s == pytest.approx(1 / step_s, rel=1e-9)
    assert speed.decode_tokens_per_s == pytest.approx(45.63, abs=0.01)
    # prefill uses the dense tensor rate: 111.1 TFLOPS (NVIDIA's 222.2 with sparsity, halved; not halved
    # again, the RTX A-series runs FP32 accumulate at full rate), so it is no longer null either
    assert speed.prefill_tokens_per_s is not None and speed.notes == ""


def test_nvidia_fp8_is_twice_fp16_on_every_row_with_both() -> None:
    """Same tensor cores, half the bits: an NVIDIA row whose FP8 is not 2x its FP16 mixes conventions (sparse vs
    dense, FP16 vs FP32 accumulate) -- e.g. GeForce rows must carry the FP16-accumulate pair (RTX 4090 330.3 /
    660.6, RTX 4070 116 / 233). 3% slack: NVIDIA's own L40S datasheet gives FP16 362.05 but FP8 733 (2.025x)."""
    odd = {g.id: (g.fp16_tflops_dense, g.fp8_tflops_dense) for g in catalog().values()
           if g.vendor == "NVIDIA" and g.fp16_tflops_dense and g.fp8_tflops_dense
           and not 1.97 <= g.fp8_tflops_dense / g.fp16_tflops_dense <= 2.03}
    assert odd == {}


def test_driver_reported_memory_is_just_under_the_marketed_gib() -> None:
    """An nvidia-smi total is the marketed GiB minus what the driver/ECC reserves (0-7%): a figure above the
    marketed size, or far below, is a misread log (e.g. a 12 GB card's 12288 MiB on a 10 GB RTX 3080 row)."""
    odd = {g.id: g.visible_mib for g in catalog().values()
           if g.vendor == "NVIDIA" and g.visible_mib and g.memory_basis == "gib"
           and not 0.93 < g.visible_mib / (g.memory_gb * 1024) <= 1.0}
    assert odd == {}
    assert get_gpu("rtx-3080").visible_mib == 10240 and get_gpu("rtx-4060").visible_mib == 8188
