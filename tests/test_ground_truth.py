"""Every row of shared/reference/sizing/ground_truth.csv (copied to tests/fixtures) is either compared with our
figure, under a stated tolerance and reason, or listed as not about anything vramlab computes."""

from __future__ import annotations

import csv
from collections.abc import Callable

import pytest
from helpers import FIXTURES, arch

from sizing_core.formats import ggml_bpw, weight_bytes
from sizing_core.kv_cache import kv_bytes_per_request
from sizing_core.parameters import count_parameters
from sizing_core.units import GIB, MIB

ROWS = list(csv.DictReader((FIXTURES / "ground_truth.csv").open()))

LLAMA3_8B = "meta-llama__Llama-3.1-8B"  # Meta-Llama-3-8B has the same shapes (32 x 4096, 14336 FFN, 128256 vocab)
EXACT = (0.0, "exact count from a safetensors scan")
GGUF = (0.005, "llama.cpp prints sizes to 0.01 GiB and the file also holds tokenizer/metadata")


def _params(model: str) -> Callable[[], float]:
    return lambda: count_parameters(arch(model)).total


def _gguf(fmt: str) -> Callable[[], float]:
    return lambda: weight_bytes(arch(LLAMA3_8B), fmt) / GIB


def _kv_gib(model: str, tokens: int) -> Callable[[], float]:
    return lambda: kv_bytes_per_request(arch(model), tokens, "bf16") / GIB


# (model, quantity) -> (our value in the row's unit, relative tolerance, why that tolerance)
COMPARED: dict[tuple[str, str], tuple[Callable[[], float], float, str]] = {
    ("openai/gpt-oss-20b", "total_params_official"):
        (_params("openai__gpt-oss-20b"), 0.005, "official figure is rounded to 0.1B"),
    ("openai/gpt-oss-20b", "safetensors_total_bytes"):
        (lambda: weight_bytes(arch("openai__gpt-oss-20b"), "native") / GIB, 0.005,
         "MXFP4 experts + BF16 rest, computed; the scan prints 2 decimals"),
    # The Qwen3-Next card states rounded billions; it counts active parameters without embeddings.
    ("Qwen/Qwen3-Next-80B-A3B-Instruct", "total_params_official"):
        (_params("Qwen__Qwen3-Next-80B-A3B-Thinking"), 0.00625, "card rounds to whole billions (80 +- 0.5)"),
    ("Qwen/Qwen3-Next-80B-A3B-Instruct", "active_params_official"):
        (lambda: (lambda c: c.active - c.embedding)(count_parameters(arch("Qwen__Qwen3-Next-80B-A3B-Thinking"))),
         0.1667, "card rounds to whole billions (3 +- 0.5) and excludes embeddings"),
    ("Qwen/Qwen3-Next-80B-A3B-Instruct", "non_embedding_params_official"):
        (lambda: count_parameters(arch("Qwen__Qwen3-Next-80B-A3B-Thinking")).non_embedding, 0.0064,
         "card rounds to whole billions (79 +- 0.5)"),
    ("moonshotai/Kimi-Linear-48B-A3B-Instruct", "total_params_official"):
        (lambda: count_parameters(arch("moonshotai__Kimi-Linear-48B-A3B-Instruct")).non_embedding, 0.0105,
         "card's 48B is rounded and leaves out the 0.75B of embeddings (49.12B with them)"),
    ("moonshotai/Kimi-Linear-48B-A3B-Instruct", "safetensors_param_count"):
        (_params("moonshotai__Kimi-Linear-48B-A3B-Instruct"), *EXACT),
    ("moonshotai/Kimi-Linear-48B-A3B-Instruct", "safetensors_total_bytes"):
        (lambda: weight_bytes(arch("moonshotai__Kimi-Linear-48B-A3B-Instruct"), "bf16") / GIB, 0.001,
         "BF16 at 2 bytes; fp32 A_log/dt_bias add ~0.1 MB; the scan prints 1 decimal"),
    ("meta-llama/Llama-3.2-3B-Instruct", "safetensors_param_count"):
        (_params("meta-llama__Llama-3.2-3B-Instruct"), *EXACT),
    ("meta-llama/Llama-3.2-3B-Instruct", "safetensors_total_bytes"):
        (lambda: weight_bytes(arch("meta-llama__Llama-3.2-3B-Instruct"), "bf16") / GIB, 0.001, "2 decimals printed"),
    ("Qwen/Qwen3-8B", "safetensors_param_count"): (_params("Qwen__Qwen3-8B"), *EXACT),
    ("Qwen/Qwen3-8B", "safetensors_total_bytes"):
        (lambda: weight_bytes(arch("Qwen__Qwen3-8B"), "bf16") / GIB, 0.001, "2 decimals printed"),
    ("deepseek-ai/DeepSeek-V2-Lite-Chat", "safetensors_param_count"):
        (_params("deepseek-ai__DeepSeek-V2-Lite-Chat"), *EXACT),
    ("deepseek-ai/DeepSeek-V2-Lite-Chat", "model_param_count_without_lm_head"):
        (lambda: (lambda c: c.total - c.embedding // 2)(count_parameters(arch("deepseek-ai__DeepSeek-V2-Lite-Chat"))),
         *EXACT),
    **{("meta-llama/Meta-Llama-3-8B", f"gguf_size_{t}"): (_gguf(t.lower()), *GGUF)
       for t in ("Q2_K", "Q3_K_M", "Q4_K_M", "Q5_K_M", "Q6_K", "Q8_0")},
    ("(ggml type)", "nominal_bpw_IQ4_XS"): (lambda: ggml_bpw("IQ4_XS"), 0.0, "block struct size"),
    ("(ggml type)", "nominal_bpw_IQ4_NL"): (lambda: ggml_bpw("IQ4_NL"), 0.0, "block struct size"),
    ("(ggml type)", "nominal_bpw_IQ3_XXS"): (lambda: ggml_bpw("IQ3_XXS"), 0.0, "block struct size"),
    ("(ggml type)", "nominal_bpw_IQ2_XXS"): (lambda: ggml_bpw("IQ2_XXS"), 0.0, "block struct size"),
    # The HF blog's columns say GB but are GiB of 1,024 / 16,000 / 128,000-token caches (see the notes column).
    ("meta-llama/Llama-3.1-8B", "kv_cache_fp16_1k_tokens"): (_kv_gib(LLAMA3_8B, 1024), 0.001, "3 decimals"),
    ("meta-llama/Llama-3.1-8B", "kv_cache_fp16_16k_tokens"): (_kv_gib(LLAMA3_8B, 16000), 0.003, "2 decimals"),
    ("meta-llama/Llama-3.1-8B", "kv_cache_fp16_128k_tokens"): (_kv_gib(LLAMA3_8B, 128000), 0.001, "2 decimals"),
    ("meta-llama/Llama-3.1-70B", "kv_cache_fp16_1k_tokens"): (_kv_gib("meta-llama__Llama-3.1-70B", 1024), 0.002,
                                                              "0.3125 printed to 3 decimals"),
    ("meta-llama/Llama-3.1-70B", "kv_cache_fp16_16k_tokens"): (_kv_gib("meta-llama__Llama-3.1-70B", 16000), 0.002,
                                                               "2 decimals"),
    ("meta-llama/Llama-3.1-70B", "kv_cache_fp16_128k_tokens"): (_kv_gib("meta-llama__Llama-3.1-70B", 128000),
                                                                0.001, "2 decimals"),
    **{("deepseek-ai/DeepSeek-V3 (or R1; 61 layers)", q): (
        (lambda: kv_bytes_per_request(arch("deepseek-ai__DeepSeek-V3"), 32768, "bf16") / MIB), 0.0, "exact")
       for q in ("llamacpp_kv_self_size_f16_ctx32768",)},
    ("deepseek-ai/DeepSeek-V3 (or R1; 61 layers)", "llamacpp_kv_ckv_f16_ctx32768"):
        (lambda: 61 * 32768 * arch("deepseek-ai__DeepSeek-V3").layers[0].mixer.kv_lora_rank * 2 / MIB, 0.0, "exact"),
    ("deepseek-ai/DeepSeek-V3 (or R1; 61 layers)", "llamacpp_kv_krope_f16_ctx32768"):
        (lambda: 61 * 32768 * arch("deepseek-ai__DeepSeek-V3").layers[0].mixer.qk_rope_head_dim * 2 / MIB, 0.0,
         "exact"),
}

NOT_RELEVANT = {
    ("openai/gpt-oss-20b", "safetensors_element_count"):
        "counts packed uint8 MXFP4 bytes as elements; not a parameter count (the row's own note)",
    ("(reference 7B)", "gguf_size_F16"): "no config for the unnamed 7B reference model",
    ("(ggml type)", "nominal_bpw_IQ3_M_mix"): "IQ3_M is not a format vramlab offers",
    ("(ggml type)", "nominal_bpw_IQ2_M_mix"): "IQ2_M is not a format vramlab offers",
    ("(unspecified, vLLM PR example)", "vllm_max_concurrency_check"):
        "a concurrency figure for an unnamed model; engine concurrency belongs to placement",
    **{("meta-llama/Meta-Llama-3-8B", f"gguf_size_{t}"): f"{t} is not a format vramlab offers"
       for t in ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K_S", "Q3_K_S", "Q3_K_L", "Q4_K_S", "Q5_K_S")},
}


def _key(row: dict[str, str]) -> tuple[str, str]:
    return row["model"], row["quantity"]


def test_every_row_is_compared_or_explained() -> None:
    keys = [_key(r) for r in ROWS]
    unknown = [k for k in keys if k not in COMPARED and k not in NOT_RELEVANT]
    assert not unknown, f"ground-truth rows with no rule: {unknown}"
    stale = (set(COMPARED) | set(NOT_RELEVANT)) - set(keys)
    assert not stale, f"rules for rows that no longer exist: {stale}"


@pytest.mark.parametrize("row", [r for r in ROWS if _key(r) in COMPARED], ids=lambda r: f"{r['model']}:{r['quantity']}")
def test_ground_truth_row(row: dict[str, str]) -> None:
    compute, tolerance, reason = COMPARED[_key(row)]
    expected, ours = float(row["value"]), compute()
    assert ours == pytest.approx(expected, rel=tolerance, abs=1e-9), f"{reason}: ours {ours} vs {expected}"
