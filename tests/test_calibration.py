"""The engine models against the calibration set: every counted case inside its published band, the
acceptance figures, the bands module regenerated from the current model, and the mechanisms by hand.

Measured values come from the cited logs in ``sizing_core/data/calibration/*.csv`` (citation and quoted line per
row); predictions from ``engines.memory`` / ``engines.speed``. Tolerances are the issue's acceptance thresholds.
"""

from __future__ import annotations

import math
import statistics
import sys
from pathlib import Path

import pytest

from sizing_core import calibration
from sizing_core.calibration import case_arch
from sizing_core.calibration_bands import BANDS
from sizing_core.engines import get_engine
from sizing_core.engines.memory import (
    SAMPLER_BYTES,
    SAMPLER_BYTES_2026,
    sglang_default_fraction,
    vllm_defaults,
)
from sizing_core.gpus import get_gpu
from sizing_core.placement.deployment import default_layout, engine_startup
from sizing_core.units import GIB, MIB

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
from calibrate_report import KIND, band_of, build_bands  # noqa: E402

MEMORY = calibration.memory_comparisons()
SPEED = calibration.speed_comparisons()
COUNTED = [c for c in MEMORY + SPEED if c.use in calibration.COUNTED and KIND.get(c.quantity)
           and c.ratio == c.ratio and c.ratio > 0]


def test_the_set_is_as_large_and_varied_as_the_issue_asks() -> None:
    """At least 40 memory and 40 throughput measurements predicted and counted (a memory row gives up to five: weights,
    pool, tokens, concurrency, activation peak), 3 engines, 8 GPU kinds, dense/MoE/MLA/sliding/hybrid models."""
    speed = {c.case for c in SPEED if c.use in calibration.COUNTED}
    memory_values = [c for c in MEMORY if c.use in calibration.COUNTED]
    assert len(memory_values) >= 40 and len(speed) >= 40, (len(memory_values), len(speed))
    cases = [c for c in MEMORY + SPEED if c.use in calibration.COUNTED]
    assert {c.engine for c in cases} == {"vllm", "sglang", "llama.cpp"}
    assert len({c.gpu for c in cases}) >= 8
    assert {"dense", "moe", "mla", "sliding", "hybrid"} <= {c.model_class for c in cases}


@pytest.mark.parametrize("case", COUNTED, ids=[f"{c.case}-{c.quantity}" for c in COUNTED])
def test_each_case_lies_inside_its_band(case: calibration.Comparison) -> None:
    """measured / predicted inside the band the CLI and exports publish for this engine, GPU class and model class
    (``calibration.band``): a model change that moves a case out fails here until scripts/calibrate.py is re-run."""
    low, high = calibration.band(KIND[case.quantity], case.engine, get_gpu(case.gpu), case_arch(_config(case)))
    assert low <= case.ratio <= high, (case.measured, case.predicted, case.note)


def _config(case: calibration.Comparison) -> str:
    for name in ("memory.csv", "throughput.csv"):
        for row in calibration.read_csv(name):
            if row["id"] == case.case:
                return row["config"]
    raise AssertionError(case.case)


def test_the_bands_module_is_what_the_current_model_gives() -> None:
    fresh = build_bands(MEMORY + SPEED)
    stored = {k: {g: {"band": list(v["band"]), "n": v["n"], "median": v["median"]} for g, v in groups.items()}
              for k, groups in BANDS.items()}
    assert fresh == stored, "re-run scripts/calibrate.py"


def test_acceptance_kv_pool_and_tokens_within_10_percent() -> None:
    kv = [c for c in MEMORY if c.quantity in ("kv_gib", "kv_tokens") and c.engine in ("vllm", "sglang")
          and c.use in calibration.COUNTED and c.ratio == c.ratio]
    within = [c for c in kv if abs(c.ratio - 1) <= 0.10]
    assert len(kv) >= 15 and len(within) >= 0.85 * len(kv), [(c.case, c.quantity, c.ratio) for c in kv]


def test_acceptance_weights_as_loaded_within_5_percent() -> None:
    weights = [c for c in MEMORY if c.quantity == "weights_gib" and c.use in calibration.COUNTED]
    within = [c for c in weights if abs(c.ratio - 1) <= 0.05]
    assert len(weights) >= 10 and len(within) >= 0.85 * len(weights)


def test_acceptance_batch_one_decode() -> None:
    decode = [c.ratio for c in SPEED if c.quantity == "decode_tok_s" and c.use in calibration.COUNTED]
    assert len(decode) >= 40
    assert sum(1 / 1.5 <= r <= 1.5 for r in decode) >= 0.75 * len(decode)
    assert 0.85 <= statistics.median(decode) <= 1.2


def test_bands_cover_cases_they_were_not_built_from() -> None:
    """5-fold: bands rebuilt without each fifth of the cases cover at least 80% of that fifth."""
    cases = sorted({c.case for c in COUNTED})
    covered = total = 0
    for k in range(5):
        test = set(cases[k::5])
        bands = build_bands([c for c in COUNTED if c.case not in test])
        for c in COUNTED:
            if c.case in test:
                b = band_of(bands, c)
                total += 1
                covered += bool(b and b[0] <= c.ratio <= b[1])
    assert covered >= 0.8 * total, (covered, total)


def test_failing_start_ups_are_predicted_to_fail() -> None:
    """vllm#23278 (gpt-oss-120b on one H100: -2.14 GiB) and vllm#13882 (Qwen2.5-7B on an 8 GB RTX 4060 at 0.7:
    -1.05 GiB): the engine refused to start, and so does the model."""
    failed = [c for c in MEMORY if c.quantity == "kv_gib" and c.measured < 0]
    assert len(failed) == 2 and all(c.predicted < 0 for c in failed)


# ------------------------------------------------------------------------------------------------ mechanisms by hand


def test_vllm_defaults_follow_the_gpu() -> None:
    """vllm/engine/arg_utils.py since 0.9: >= 70 GiB and no 'a100' in the name -> 8192 tokens / 1024 sequences, else
    2048 / 256 (vllm#33920's RTX 4090 warm-up ran '256 dummy requests'); 0.8.x: 256 sequences."""
    assert vllm_defaults(get_gpu("h100"), (0, 28)) == (8192, 1024)
    assert vllm_defaults(get_gpu("a100-80gb-sxm"), (0, 28)) == (2048, 256)
    assert vllm_defaults(get_gpu("rtx-4090"), (0, 28)) == (2048, 256)
    assert vllm_defaults(get_gpu("h100"), (0, 8)) == (8192, 256)


def test_vllm_pool_of_gpt_oss_120b_on_one_h100_by_hand() -> None:
    """vllm#27508 (Oct 2025, ~0.11): ``vllm serve openai/gpt-oss-120b --gpu-memory-utilization 0.95
    --max-num-batched-tokens 1024`` -> "Available KV cache memory: 1.71 GiB".

    total CUDA sees = 81,559 MiB - 0.46 GiB = 79.187 GiB; budget 0.95 x 79.187 = 75.228 GiB;
    weights: 60.8 GiB MXFP4 with the experts repacked for Marlin on Hopper (per-rank intermediate 2,880 -> 2,944,
    hidden 2,880 -> 3,072: x 1.0904) = 65.89 GiB (vllm#23278 logged 65.97);
    activation: sampler warm-up of min(1024, 1024) rows x 201,088 words x 38 B + 1024 x 2880 x 2 B of hidden states
    = 7.287 GiB; non-torch 0.15 GiB -> pool 75.228 - 65.89 - 7.287 - 0.15 = 1.90 GiB (1.71 logged: 11% low)."""
    arch = case_arch("openai__gpt-oss-120b")
    vllm = get_engine("vllm").with_settings(memory_fraction=0.95, max_num_batched_tokens=1024, version="0.11")
    start = engine_startup(arch, get_gpu("h100"), vllm, "native", 1, 1, 131072)
    assert SAMPLER_BYTES == 38.0
    sampler = (1024 * 2880 * 2 + 38 * 1024 * 201088) / GIB
    assert start.activation_gib == pytest.approx(sampler, rel=1e-9) and sampler == pytest.approx(7.2928, abs=1e-4)
    total = 81_559 / 1024 - 0.46
    assert start.total_gib == pytest.approx(total)
    expected = 0.95 * total - start.weights_gib_per_gpu - sampler - 0.15
    assert start.kv_cache_gib_per_gpu == pytest.approx(expected, rel=1e-9)
    assert start.weights_gib_per_gpu == pytest.approx(65.97, rel=0.01)
    assert start.kv_cache_gib_per_gpu == pytest.approx(1.71, abs=0.25)


def test_sampler_changed_between_the_2025_and_2026_logs() -> None:
    """club-3090#1139 (2026): 1.66 GiB peak activation for 256 rows x 248,320 words (Qwen3.x) at 2,048 batched
    tokens on 2 x RTX 3090: (1.66 GiB - 2048 x 5120 x 2 B) / (256 x 248,320) = 27.7 B per element."""
    assert SAMPLER_BYTES_2026 == 27.0
    per_element = (1.66 * GIB - 2048 * 5120 * 2) / (256 * 248_320)
    assert per_element == pytest.approx(27.0, abs=1.0)


def test_hybrid_paging_of_qwen36_35b_on_a_5090_by_hand() -> None:
    """club-3090#612 (vLLM 0.24, RTX 5090, FP8 KV, max_model_len 131,072): pool 5.98 GiB, "GPU KV cache size:
    567,978 tokens", "Maximum concurrency ... 4.33x".

    Attention page per token and layer (TP 1): 2 KV heads x 256 x (K + V) x 1 B = 1,024 B. Gated DeltaNet state:
    conv 3 x (2 x 16 x 128 + 32 x 128) x 2 B = 49,152 B + SSM 32 x 128 x 128 x 4 B (float32) = 2,097,152 B
    -> 2,146,304 B; attention block = 16 x ceil(2,146,304 / (1,024 x 16)) = 2,096 tokens ("Setting attention block
    size to 2096 tokens"). 10 full + 30 GDN layers -> 4 groups of 10; a request of 131,072 tokens takes
    ceil(131,072 / 2,096) = 63 blocks + 2 state blocks in each of 3 GDN groups = 69 blocks; at the logged
    5.98 GiB, blocks = floor(5.98 GiB / (2,146,304 x 10)) = 299 -> 299 / 69 = 4.33x, 4.33 x 131,072 tokens."""
    from sizing_core.kv_layout import layer_specs, vllm_pool

    arch = case_arch("nvidia__Qwen3.6-35B-A3B-NVFP4")
    specs = layer_specs(arch, range(arch.num_layers), "fp8", 1, 131072)
    pool = vllm_pool(specs, 5.98 * GIB, 131072, 8192, state_pages=2, concurrency_tokens=True)
    assert pool.block_size == 2096
    assert pool.max_concurrency == pytest.approx(299 / 69)
    assert pool.tokens == int(299 / 69 * 131072)
    assert pool.tokens == pytest.approx(567_978, rel=0.005)


def test_sglang_default_fraction_by_hand() -> None:
    """SGLang server_args (late 2025), H100 80 GB at TP 1: reserved = 512 + 8192 x 1.5 + 256 x 2 + 1/8 x 1024
    = 13,440 MB (above the 10 GB floor) of the 81,089 MiB CUDA reports: 1 - 13,440 / 81,089 = 0.834."""
    total_mib = 81_559 - 0.46 * 1024
    assert sglang_default_fraction(get_gpu("h100"), 1) == pytest.approx(round(1 - 13_440 / total_mib, 3))


def test_llamacpp_kv_buffers_of_gpt_oss_120b_by_hand() -> None:
    """ollama#16480 (llama-server, 2 slots, n_ctx 262,144, n_ubatch 1024, f16): "131072 cells, 18 layers" ->
    9,216 MiB and the SWA buffer "1280 cells" -> 90 MiB. 2,048 B per cell and layer (8 KV heads x 64 x K,V x 2 B):
    2 x 131,072 x 18 x 2,048 = 9,216 MiB; 2 x pad256(128 + 1024) = 2 x 1,280 cells x 18 x 2,048 = 90 MiB."""
    arch = case_arch("openai__gpt-oss-120b")
    llama = get_engine("llama.cpp").with_settings(max_num_batched_tokens=1024)
    start = engine_startup(arch, get_gpu("strix-halo"), llama, "native", 1, 1, 131072, "fp16", concurrency=2)
    assert start.kv_cache_gib_per_gpu * GIB / MIB == pytest.approx(9216 + 90)
    assert start.kv_cache_tokens == 262_144


def test_default_layout_for_exactly_n_gpus() -> None:
    """vLLM: the largest TP that divides the heads and N inside one machine, pipeline stages for the rest;
    llama.cpp: one layer range per device."""
    qwen = case_arch("Qwen__Qwen3-235B-A22B-FP8")  # 64 heads, 4 KV heads
    h100 = get_gpu("h100")
    assert default_layout(qwen, h100, get_engine("vllm"), 4) == (4, 1)
    assert default_layout(qwen, h100, get_engine("vllm"), 16) == (8, 2)
    assert default_layout(qwen, h100, get_engine("vllm"), 6) == (2, 3)
    assert default_layout(qwen, get_gpu("rtx-4090"), get_engine("llama.cpp"), 3) == (1, 3)


def test_band_of_an_unknown_group_falls_back_to_every_engine() -> None:
    low, high = calibration.band("decode", "mlx", get_gpu("mac-m4-max-128"), case_arch("Qwen__Qwen3-8B"))
    assert (low, high) == tuple(BANDS["decode"]["*|*|*"]["band"]) and low < 1 < high
    assert math.isfinite(low)
