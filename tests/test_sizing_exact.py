"""Hand-derived exact figures: the arithmetic is written out in each test, not copied from the code's output."""

from __future__ import annotations

from helpers import arch

from sizing_core.kv_cache import kv_bytes_per_request, kv_bytes_per_token, state_bytes_per_request
from sizing_core.parameters import count_parameters
from sizing_core.units import GIB


def test_deepseek_v3_mla_caches_one_latent_per_layer() -> None:
    a = arch("deepseek-ai__DeepSeek-V3")
    # 61 MLA layers x (kv_lora_rank 512 + qk_rope_head_dim 64) x 2 bytes, no factor 2 for K and V.
    assert kv_bytes_per_token(a, "bf16") == 61 * (512 + 64) * 2 == 70_272
    assert kv_bytes_per_token(a, "fp8") == 61 * 576 * 1 == 35_136
    # The latent has no head dimension: every tensor-parallel rank holds all of it (not 70,272 / 8 = 8,784).
    assert kv_bytes_per_token(a, "bf16", tp=8) == 70_272
    assert state_bytes_per_request(a) == 0


def test_qwen3_next_counts_only_full_attention_layers() -> None:
    a = arch("Qwen__Qwen3-Next-80B-A3B-Thinking")
    # full_attention_interval 4 over 48 layers -> 12 full layers; 2 KV heads x head_dim 256 x (K+V) x 2 bytes.
    per_token = 12 * 2 * 2 * 256 * 2
    assert per_token == 24_576
    assert kv_bytes_per_token(a, "bf16") == per_token
    one_million = 1_048_576
    assert kv_bytes_per_request(a, one_million, "bf16") / GIB == 24.0  # not 96 (all 48 layers)
    assert 48 * 2 * 2 * 256 * 2 * one_million / GIB == 96.0
    # 36 Gated DeltaNet layers: conv (4-1) x (2*16*128 + 32*128 = 8192) x 2 B + state 32 x 128 x 128 x 2 B.
    assert state_bytes_per_request(a) == 36 * (3 * 8192 * 2 + 32 * 128 * 128 * 2) == 39_518_208


def test_kimi_linear_has_seven_mla_layers_and_fp32_kda_state() -> None:
    a = arch("moonshotai__Kimi-Linear-48B-A3B-Instruct")
    assert a.mixer_counts() == {"kimi_delta_attention": 20, "mla": 7}
    mla_layers = [i + 1 for i, layer in enumerate(a.layers) if layer.mixer.kind == "mla"]
    assert mla_layers == [4, 8, 12, 16, 20, 24, 27]  # linear_attn_config.full_attn_layers, 1-based
    assert kv_bytes_per_token(a, "bf16") == 7 * 576 * 2 == 8_064
    # KDA: three short convs (4-1) x 3 x 32 heads x 128 x 2 B + recurrent 32 x 128 x 128 x 4 B (always fp32).
    assert state_bytes_per_request(a) == 20 * (3 * 3 * 32 * 128 * 2 + 32 * 128 * 128 * 4) == 43_417_600


def test_llama_3_1_8b_gqa_bytes_per_token_and_tensor_parallel() -> None:
    a = arch("meta-llama__Llama-3.1-8B")
    assert kv_bytes_per_token(a, "bf16") == 32 * 2 * 8 * 128 * 2 == 131_072
    # TP 8 splits the 8 KV heads: one per rank.
    assert kv_bytes_per_token(a, "bf16", tp=8) == 32 * 2 * 1 * 128 * 2 == 16_384
    # TP 16 > 8 KV heads: heads are replicated, still one per rank, not half a head.
    assert kv_bytes_per_token(a, "bf16", tp=16) == 16_384
    # llama.cpp's q8_0 cache: 34 bytes per 32 values.
    assert kv_bytes_per_token(a, "q8_0") == 32 * 2 * 8 * 128 * 34 / 32


def test_gpt_oss_20b_sliding_layers_are_capped_at_the_window() -> None:
    a = arch("openai__gpt-oss-20b")
    assert a.mixer_counts() == {"sliding_attention": 12, "full_attention": 12}
    per_layer_token = 2 * 8 * 64 * 2  # K+V x 8 KV heads x head_dim 64 x 2 bytes = 2,048
    assert kv_bytes_per_token(a, "bf16") == 12 * per_layer_token  # only the 12 full layers grow
    expected_8k = 12 * per_layer_token * 8192 + 12 * per_layer_token * 128  # window 128
    assert kv_bytes_per_request(a, 8192, "bf16") == expected_8k == 204_472_320
    assert kv_bytes_per_request(a, 64, "bf16") == 24 * per_layer_token * 64  # below the window all 24 grow


def test_llama_3_2_3b_counts_tied_embeddings_once() -> None:
    a = arch("meta-llama__Llama-3.2-3B-Instruct")
    h, v, inter, layers = 3072, 128256, 8192, 28
    per_layer = 2 * h * h + 2 * h * 1024 + 3 * h * inter + 2 * h  # q,o + k,v (8 x 128) + MLP + 2 norms
    embeddings = v * h
    total = layers * per_layer + embeddings + h  # + final norm; no separate LM head
    assert total == 3_212_749_824
    counts = count_parameters(a)
    assert counts.total == total
    assert counts.embedding == embeddings  # once, not 2 x 394,002,432


def test_llama4_chunked_layers_are_capped_at_the_chunk() -> None:
    a = arch("meta-llama__Llama-4-Maverick-17B-128E-Instruct")
    assert a.mixer_counts() == {"chunked_attention": 36, "full_attention": 12}  # every 4th layer is global
    per_layer_token = 2 * 8 * 128 * 2
    context = 32768
    expected = 12 * per_layer_token * context + 36 * per_layer_token * 8192  # attention_chunk_size 8192
    assert kv_bytes_per_request(a, context, "bf16") == expected


def test_nemotron_h_mamba2_state() -> None:
    a = arch("nvidia__Nemotron-H-56B-Base-8K")
    assert a.mixer_counts()["mamba2"] == 54 and a.mixer_counts()["full_attention"] == 10
    # conv (4-1) x (256 heads x 64 + 2 x 8 groups x 256) x 2 B + SSM 256 x 64 x 256 x 2 B, per Mamba2 layer.
    per_layer = 3 * (256 * 64 + 2 * 8 * 256) * 2 + 256 * 64 * 256 * 2
    assert state_bytes_per_request(a) == 54 * per_layer == 459_620_352
    assert kv_bytes_per_token(a, "bf16") == 10 * 2 * 8 * 128 * 2


def test_moe_active_parameters_mixtral() -> None:
    a = arch("mistralai__Mixtral-8x7B-v0.1")
    c = count_parameters(a)
    expert = 3 * 4096 * 14336
    # 2 of 8 experts run per token: 6 experts per layer are inactive.
    assert c.total - c.active == 32 * 6 * expert
