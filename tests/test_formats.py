"""Weight formats per tensor group: GGUF block sizes and mix rules, and checkpoints' native schemes."""

from __future__ import annotations

from collections import Counter

import pytest
from helpers import arch

from sizing_core.formats import (
    GGUF_MIXES,
    ggml_bpw,
    gguf_type,
    is_excluded,
    mix_context,
    tensor_bits,
    weight_bytes,
)
from sizing_core.tensors import Role
from sizing_core.units import GIB


@pytest.mark.parametrize(("ggml", "bpw"), [
    ("Q8_0", 8.5), ("Q4_0", 4.5), ("Q2_K", 2.625), ("Q3_K", 3.4375), ("Q4_K", 4.5), ("Q5_K", 5.5),
    ("Q6_K", 6.5625), ("IQ4_XS", 4.25), ("MXFP4", 4.25),
])
def test_ggml_block_bits(ggml: str, bpw: float) -> None:
    # bpw = 8 x bytes per block / elements per block (ggml-common.h static_asserts), e.g. Q6_K 8 x 210 / 256.
    assert ggml_bpw(ggml) == bpw


def test_q4_k_m_promotions_on_llama_3_8b() -> None:
    a = arch("meta-llama__Llama-3.1-8B")
    ctx = mix_context(a)
    types = Counter((t.role, gguf_type("q4_k_m", t, ctx)) for t in a.tensors)
    # use_more_bits over 32 layers: i < 4, i >= 28, and (i - 4) % 3 == 2 -> 6, 9, ..., 27: 4 + 4 + 8 = 16 layers.
    assert types[(Role.ATTN_V, "Q6_K")] == 16 and types[(Role.ATTN_V, "Q4_K")] == 16
    assert types[(Role.FFN_DOWN, "Q6_K")] == 16 and types[(Role.FFN_DOWN, "Q4_K")] == 16
    assert types[(Role.OUTPUT, "Q6_K")] == 1 and types[(Role.TOKEN_EMBD, "Q4_K")] == 1
    assert types[(Role.NORM, "F32")] == 32 + 1


def test_q4_k_m_is_not_params_times_4_5_bits() -> None:
    a = arch("meta-llama__Llama-3.1-8B")
    per_layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096  # q,o + k,v + MLP + norms
    params = 32 * per_layer + 2 * 128256 * 4096 + 4096  # untied embeddings and LM head, final norm
    assert params == 8_030_261_248
    naive = params * 4.5 / 8 / GIB  # 4.21 GiB, the popular shortcut
    assert round(naive, 2) == 4.21
    assert weight_bytes(a, "q4_k_m") / GIB == pytest.approx(4.58, abs=0.01)  # llama.cpp's table


def test_row_length_fallback_when_not_a_block_multiple() -> None:
    a = arch("openai__gpt-oss-20b")  # hidden 2880 = 11.25 x 256: k-quant rows do not fit
    ctx = mix_context(a)
    q = next(t for t in a.tensors if t.role == Role.ATTN_Q)
    assert q.cols == 2880 and gguf_type("q4_k_m", q, ctx) == "Q4_K"
    bits = dict(zip([t.name for t in a.tensors], tensor_bits(a, "q4_k_m"), strict=True))
    assert bits[q.name] == ggml_bpw("Q5_0")  # llama.cpp tensor_type_fallback: Q4_K -> Q5_0


#: unsloth/gpt-oss-20b-GGUF at revision d449b42d93e1c2c7bda5312f5c25c8fb91dfa9b4, file sizes as the Hugging Face
#: API lists them (quoted with their sha256 in a public downloader's preset list; see docs/sizing.md)
UNSLOTH_GPT_OSS_20B_GGUF_BYTES = {"q8_0": 12_109_567_168, "q4_k_m": 11_624_759_488}


def test_gpt_oss_gguf_mixes_keep_the_mxfp4_experts() -> None:
    a = arch("openai__gpt-oss-20b")
    ctx = mix_context(a)
    expert = next(t for t in a.tensors if t.role == Role.FFN_DOWN_EXPS)
    q = next(t for t in a.tensors if t.role == Role.ATTN_Q)
    for mix in GGUF_MIXES:  # llama.cpp writes the checkpoint's MXFP4 expert blocks as they are, in every mix
        assert gguf_type(mix, expert, ctx) == "MXFP4", mix
    assert gguf_type("q8_0", q, ctx) == "Q8_0"  # the rest follows the mix
    # Published files: each is our tensor bytes plus the same GGUF header (metadata and the 201k-token vocabulary),
    # so both differences are small, positive and equal. With Q8_0 experts the Q8_0 file would be ~8.6 GiB bigger.
    header = {mix: size - weight_bytes(a, mix) for mix, size in UNSLOTH_GPT_OSS_20B_GGUF_BYTES.items()}
    assert all(0 < h < 32 * 2**20 for h in header.values()), header
    assert abs(header["q8_0"] - header["q4_k_m"]) < 64 * 2**10, header
    # the rule is gpt-oss's converter, not "any model with an MXFP4 expert": a dense BF16 model is unchanged
    llama = arch("meta-llama__Llama-3.1-8B")
    assert not mix_context(llama).mxfp4_experts


def test_tied_embeddings_take_the_output_type() -> None:
    a = arch("Qwen__Qwen3-1.7B")
    ctx = mix_context(a)
    embd = next(t for t in a.tensors if t.role == Role.TOKEN_EMBD)
    assert gguf_type("q4_k_m", embd, ctx) == "Q6_K"
    assert not any(t.role == Role.OUTPUT for t in a.tensors)


@pytest.mark.parametrize(("name", "patterns", "excluded"), [
    ("model.layers.3.self_attn.q_proj", ("model.layers.*.self_attn",), True),
    ("model.layers.0.mlp.gate", ("model.layers.0.mlp.gate",), True),
    ("model.layers.0.mlp.gate_proj", ("model.layers.0.mlp.gate",), False),
    ("model.layers.12.self_attn.o_proj", ("model.language_model.layers.12.self_attn*",), True),
    ("model.layers.5.mlp.shared_experts.down_proj", ("re:.*shared_experts.*",), True),
    ("model.layers.5.mlp.experts.down_proj", ("re:.*mlp\\.(gate|up|gate_up|down)_proj.*",), False),
    ("model.layers.0.mlp.down_proj", ("re:.*mlp\\.(gate|up|gate_up|down)_proj.*",), True),
    ("lm_head", ("lm_head",), True),
])
def test_exclusion_patterns(name: str, patterns: tuple[str, ...], excluded: bool) -> None:
    assert is_excluded(name, patterns) is excluded


def _bits_by_name(a, fmt: str) -> dict[str, float]:
    return dict(zip([t.name for t in a.tensors], tensor_bits(a, fmt), strict=True))


def test_native_fp8_block_keeps_listed_modules_in_bf16() -> None:
    a = arch("Qwen__Qwen3-30B-A3B-FP8")
    assert a.native.weight_format == "fp8_block" and a.native.block_size == (128, 128)
    bits = _bits_by_name(a, "native")
    assert bits["model.layers.0.self_attn.q_proj"] == 8 + 32 / (128 * 128)  # one fp32 scale per 128x128 block
    assert bits["model.layers.0.mlp.gate"] == 16  # router listed in modules_to_not_convert
    assert bits["lm_head"] == 16


def test_native_mxfp4_only_quantizes_experts() -> None:
    a = arch("openai__gpt-oss-20b")
    bits = _bits_by_name(a, "native")
    assert bits["model.layers.0.mlp.experts.down_proj"] == 4.25  # 4-bit E2M1 + E8M0 scale per 32
    assert bits["model.layers.0.self_attn.q_proj"] == 16
    assert bits["model.embed_tokens"] == 16


def test_native_nvfp4_from_sidecar_excludes_attention() -> None:
    a = arch("nvidia__Gemma-4-31B-IT-NVFP4")
    assert a.native.weight_format == "nvfp4" and a.native.source == "hf_quant_config.json"
    bits = _bits_by_name(a, "native")
    assert bits["model.layers.0.self_attn.q_proj"] == 16  # model.language_model.layers.0.self_attn* excluded
    assert bits["model.layers.0.mlp.down_proj"] == 4.5  # 4 bits + FP8 scale per 16


def test_native_int4_group_32_with_regex_ignores() -> None:
    a = arch("moonshotai__Kimi-K2.5")
    assert a.native.weight_format == "int4" and a.native.group_size == 32
    bits = _bits_by_name(a, "native")
    assert bits["model.layers.5.mlp.experts.down_proj"] == 4 + 16 / 32
    assert bits["model.layers.5.mlp.shared_experts.down_proj"] == 16
    assert bits["model.layers.5.self_attn.q_a_proj"] == 16
    assert bits["model.layers.0.mlp.down_proj"] == 16  # first_k_dense_replace layer, ignored by regex


def test_native_deepseek_v4_fp8_with_fp4_experts() -> None:
    a = arch("deepseek-ai__DeepSeek-V4-Flash")
    bits = _bits_by_name(a, "native")
    assert bits["model.layers.3.mlp.experts.up_proj"] == 4.25
    assert bits["model.layers.3.mlp.shared_experts.up_proj"] == 8 + 32 / (128 * 128)


def test_every_gguf_mix_is_smaller_than_bf16_and_ordered() -> None:
    a = arch("Qwen__Qwen3-8B")
    sizes = {m: weight_bytes(a, m) for m in GGUF_MIXES}
    assert sizes["q8_0"] > sizes["q6_k"] > sizes["q5_k_m"] > sizes["q4_k_m"] > sizes["q3_k_m"] > sizes["q2_k"]
    assert sizes["q8_0"] < weight_bytes(a, "bf16")
