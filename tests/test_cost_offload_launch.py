"""Cost arithmetic (checked against seed 000's own figures), RAM offload, launch commands, engine rules."""

from __future__ import annotations

import pytest
from helpers import arch

from sizing_core import cost
from sizing_core.engines import get_engine
from sizing_core.errors import SizingError
from sizing_core.gpus import get_gpu
from sizing_core.launch import known_sources, launch_command
from sizing_core.offload import offload
from sizing_core.placement.search import fewest_gpus
from sizing_core.registry import load_registered
from sizing_core.units import GIB


def test_monthly_costs() -> None:
    assert cost.monthly(30.40) == pytest.approx(30.40 * 730)
    # Seed 000: RunPod 8 x B300 at $55.52/h "monthly at selected hours" (4 h/day) = $6,751.23.
    assert cost.monthly_at_usage(55.52, 4) == pytest.approx(6751.23, abs=0.01)
    # Seed 000: DigitalOcean 8 x MI325X at $30.40/h = $3,696.64 at 4 h/day.
    assert cost.monthly_at_usage(30.40, 4) == pytest.approx(3696.64, abs=0.01)


def test_cost_per_million_tokens_matches_seed_000() -> None:
    # Seed 000: ~1.1 tok/s at $30.40/h -> $7,676.77 per 1M tokens: 30.40 / (1.1 x 3600) x 1e6.
    assert cost.per_million_tokens(30.40, 1.1) == pytest.approx(7676.77, abs=0.01)
    with pytest.raises(ValueError, match="tokens per second must be positive"):
        cost.per_million_tokens(30.40, 0)


def test_power_and_break_even() -> None:
    # Seed 000's "local power $25.54 / mo": 1,400 W x 4 h x 30.4 days x $0.15/kWh = $25.536.
    assert cost.power_cost_per_month(1400, 4, 0.15) == pytest.approx(25.54, abs=0.005)
    months = cost.break_even_months(50_000, 55.52, 4, 1400, 0.15)
    assert months == pytest.approx(50_000 / (55.52 * 4 * 30.4 - 1.4 * 4 * 30.4 * 0.15))
    assert cost.break_even_months(50_000, 0.10, 4, 1400, 5.0) is None  # power costs more than the rent


def test_offload_layers_keeps_whole_layers_on_the_gpu() -> None:
    a = arch("meta-llama__Llama-3.1-70B")
    none = offload(a, get_gpu("rtx-4090"), "q4_k_m", ram_fraction=0.0)
    half = offload(a, get_gpu("rtx-4090"), "q4_k_m", ram_fraction=0.5)
    assert none.gpu_layers == 80 and none.ram_gib == 0
    assert 30 <= half.gpu_layers <= 41
    assert half.vram_gib < none.vram_gib and half.ram_gib > 0
    assert half.vram_gib + half.ram_gib == pytest.approx(none.vram_gib)
    # The CPU part reads from ~80 GB/s RAM instead of 1 TB/s VRAM: decode slows down a lot.
    assert half.decode_tokens_per_s < none.decode_tokens_per_s / 3


def test_offload_experts_keeps_attention_on_the_gpu() -> None:
    a = arch("Qwen__Qwen3-30B-A3B")
    experts = offload(a, get_gpu("rtx-4090"), "q4_k_m", ram_fraction=1.0, mode="experts")
    assert experts.gpu_layers == 48
    assert experts.vram_gib < 4  # attention, router, embeddings and cache only
    assert experts.ram_gib > 14
    # Only 8 of 128 experts are read per token, so decode stays usable.
    assert experts.decode_tokens_per_s > 20


def test_vllm_launch_command_from_plan() -> None:
    _, kimi = load_registered("kimi-k3.1-pro")
    placed = fewest_gpus(kimi, get_gpu("b200"), get_engine("vllm"), "bf16", context=8192)
    launch = launch_command(placed, "moonshotai/Kimi-K3.1-Pro")
    assert "--tensor-parallel-size 8" in launch.command and "--pipeline-parallel-size 5" in launch.command
    assert "--max-model-len 8192" in launch.command and launch.nodes == 5


def test_llama_cpp_and_sglang_commands() -> None:
    a = arch("meta-llama__Llama-3.1-8B")
    placed = fewest_gpus(a, get_gpu("rtx-4090"), get_engine("llama.cpp"), "q4_k_m", context=16384, concurrency=2,
                         kv_cache_dtype="q8_0")
    cmd = launch_command(placed, "meta-llama/Llama-3.1-8B", "bartowski/Meta-Llama-3.1-8B-GGUF").command
    assert "-hf bartowski/Meta-Llama-3.1-8B-GGUF:Q4_K_M" in cmd and "--ctx-size 32768" in cmd
    assert "--parallel 2" in cmd and "-ctk q8_0 -ctv q8_0" in cmd
    sg = fewest_gpus(a, get_gpu("h100"), get_engine("sglang"), "fp8", kv_cache_dtype="fp8")
    cmd = launch_command(sg, "meta-llama/Llama-3.1-8B").command
    assert "python -m sglang.launch_server" in cmd and "--tp 1" in cmd and "fp8_e4m3" in cmd


def test_engine_usable_memory_rules() -> None:
    h100 = get_gpu("h100")
    # 0.9 x (81,559 MiB as nvidia-smi shows - 0.46 GiB CUDA does not report) - 0.15 GiB non-torch memory (TP 1)
    assert get_engine("vllm").usable_bytes(h100) == pytest.approx(0.9 * (81_559 * 2**20 - 0.46 * GIB) - 0.15 * GIB)
    # TP 4: 0.15 GiB more non-torch memory (NCCL buffers) per further rank: 0.15 + 3 x 0.15 = 0.6 GiB
    assert get_engine("vllm").usable_bytes(h100, 4) == pytest.approx(0.9 * (81_559 * 2**20 - 0.46 * GIB) - 0.6 * GIB)
    mac = get_gpu("mac-m5-max-128")
    assert get_engine("llama.cpp").usable_bytes(mac) == pytest.approx(96 * GIB - 0.3 * GIB)
    with pytest.raises(SizingError, match="unknown engine"):
        get_engine("tgi-9000")


def test_fp8_on_ampere_is_weight_only_and_fp8_moe_impossible() -> None:
    vllm = get_engine("vllm")
    a100 = get_gpu("a100-80gb-sxm")
    dense = vllm.supports(a100, "fp8", arch("meta-llama__Llama-3.1-8B"))
    assert dense.runs and not dense.native and "Marlin" in dense.note
    moe = vllm.supports(a100, "fp8", arch("Qwen__Qwen3-30B-A3B"))
    assert not moe.runs and "8.9" in moe.note


def test_a_quantized_repo_is_named_only_when_known_to_exist() -> None:
    """`<repo>-GGUF` was guessed (meta-llama/Llama-3.1-70B-GGUF does not exist); now a command names a quantized
    repo only when one is known, and otherwise says how to make the file."""
    a = arch("meta-llama__Llama-3.1-8B")
    placed = fewest_gpus(a, get_gpu("rtx-4090"), get_engine("llama.cpp"), "q4_k_m")
    guessed = launch_command(placed, "meta-llama/Llama-3.1-8B")
    assert "-GGUF" not in guessed.command and "-m Llama-3.1-8B-Q4_K_M.gguf" in guessed.command
    assert "convert_hf_to_gguf.py" in guessed.note and "llama-quantize model-BF16.gguf Llama-3.1-8B-Q4_K_M.gguf Q4_K_M" \
        in guessed.note
    # a 16-bit GGUF is what the conversion writes: the file it makes is the one the command loads
    bf16 = launch_command(fewest_gpus(a, get_gpu("rtx-4090"), get_engine("llama.cpp"), "bf16"),
                          "meta-llama/Llama-3.1-8B")
    assert "-m Llama-3.1-8B-BF16.gguf" in bf16.command
    assert "--outtype bf16 --outfile Llama-3.1-8B-BF16.gguf" in bf16.note and "llama-quantize" not in bf16.note
    known = known_sources(placed, "meta-llama/Llama-3.1-8B", "bf16",
                          {"Q4_K_M": {"repo": "bartowski/Meta-Llama-3.1-8B-GGUF", "files": [], "bytes": 1}})
    assert known == {"gguf_repo": "bartowski/Meta-Llama-3.1-8B-GGUF", "quantized_repo": None}
    assert "-hf bartowski/Meta-Llama-3.1-8B-GGUF:Q4_K_M" in launch_command(placed, "meta-llama/Llama-3.1-8B",
                                                                            **known).command
    awq = fewest_gpus(a, get_gpu("h100"), get_engine("vllm"), "awq_int4")
    made = launch_command(awq, "meta-llama/Llama-3.1-8B")
    assert made.command.startswith("vllm serve ./Llama-3.1-8B-AWQ") and "llm-compressor" in made.note
    fp8 = fewest_gpus(a, get_gpu("h100"), get_engine("vllm"), "fp8")  # vLLM quantizes FP8 at load time
    assert launch_command(fp8, "meta-llama/Llama-3.1-8B").command.startswith("vllm serve meta-llama/Llama-3.1-8B")
