"""Families beyond the watchlist, the generic decoder rule and quantization that never blocks.

Each expected value is derived by hand in the test from the config's numbers (see tests/fixtures/README.md for
where each config comes from). Published totals are quoted from the model cards, with the tolerance stated.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import FIXTURES, arch, config_path

from sizing_core import parse_config, size_model
from sizing_core.errors import ConfigError, UnsupportedQuantization
from sizing_core.formats import weight_bytes
from sizing_core.kv_cache import kv_bytes_per_request, kv_bytes_per_token
from sizing_core.parameters import count_parameters

FAMILY_CONFIGS = FIXTURES / "configs"


def load(name: str) -> dict:
    return json.loads((FAMILY_CONFIGS / f"{name}.json").read_text())


def build(name: str, **changes: object):
    cfg = load(name)
    cfg.update(changes)
    return parse_config(name, cfg)


def test_gemma2_alternates_sliding_and_global_layers_and_ties_embeddings() -> None:
    a = build("google__gemma-2-9b")
    assert a.architecture_source == "family" and a.tie_word_embeddings  # Gemma2Config default, absent here
    kinds = [layer.mixer.kind for layer in a.layers]
    assert kinds[:4] == ["sliding_attention", "full_attention", "sliding_attention", "full_attention"]
    assert kinds.count("full_attention") == 21 and kinds.count("sliding_attention") == 21
    # Per layer: q 3584x(16x256) + k,v 3584x(8x256) + o (16x256)x3584 = 14,680,064 + 2x7,340,032 + 14,680,064
    attn = 3584 * 4096 + 2 * 3584 * 2048 + 4096 * 3584
    assert attn == 44_040_192
    mlp = 3 * 3584 * 14336  # GeGLU gate, up, down
    norms = 4 * 3584  # input, post-attention, pre- and post-feedforward norms
    embed = 256000 * 3584  # tied: counted once
    total = 42 * (attn + mlp + norms) + embed + 3584
    assert total == 9_241_705_984  # google/gemma-2-9b safetensors: 9,241,705,984 (the model card's 9.24B)
    assert count_parameters(a).total == total
    # Only the 21 global layers grow: 2 (K,V) x 8 heads x 256 x 2 bytes = 8,192 B per layer and token.
    assert kv_bytes_per_token(a, "bf16") == 21 * 8_192 == 172_032
    # At 8,192 tokens the 21 sliding layers hold their 4,096-token window.
    assert kv_bytes_per_request(a, 8192) == 21 * 8192 * 8192 + 21 * 4096 * 8192


def test_phi4_mini_window_longer_than_context_is_full_attention() -> None:
    """sliding_window 262,144 >= max_position_embeddings 131,072: the window never slides. The old code took
    every layer as sliding and reported 0 KV bytes per token."""
    a = build("microsoft__Phi-4-mini-instruct")
    assert a.mixer_counts() == {"full_attention": 32}
    assert kv_bytes_per_token(a, "bf16") == 32 * 2 * 8 * 128 * 2 == 131_072
    # fused qkv (24x128 + 2x8x128 = 5,120 rows) + o 3072x3072 + SwiGLU 3x3072x8192 + 2 norms; tied vocab 200,064
    layer = 5120 * 3072 + 3072 * 3072 + 3 * 3072 * 8192 + 2 * 3072
    total = 32 * layer + 200064 * 3072 + 3072
    assert total == 3_836_021_760  # Phi-4-mini model card: 3.8B
    assert count_parameters(a).total == total
    # A window shorter than the context still slides (Phi-3-mini-4k: 2,047 of 4,096).
    short = build("microsoft__Phi-4-mini-instruct", sliding_window=2047, max_position_embeddings=4096)
    assert kv_bytes_per_token(short, "bf16") == 0
    assert kv_bytes_per_request(short, 4096) == 32 * 2047 * 2 * 8 * 128 * 2


def test_starcoder2_two_matrix_mlp_with_biases_and_sliding_window() -> None:
    a = build("bigcode__starcoder2-15b")
    h, kv = 6144, 4 * 128
    attn = h * h + 2 * h * kv + h * h + (h + 2 * kv) + h  # q, k, v, o + q/k/v biases + o bias
    mlp = 2 * h * 24576 + 24576 + h  # c_fc, c_proj + their biases (no gate)
    norms = 2 * 2 * h  # two LayerNorms, weight + bias
    total = 40 * (attn + mlp + norms) + 2 * 49152 * h + h  # untied LM head; final norm weight
    assert total == 15_957_882_880  # the model card's 15B class (bigcode/starcoder2-15b: 16B); final norm bias
    assert count_parameters(a).total == total  # (6,144) is the one tensor left out
    # Every layer slides over 4,096 tokens (< 16,384 context): nothing grows per token.
    assert kv_bytes_per_token(a, "bf16") == 0
    assert kv_bytes_per_request(a, 16384) == 40 * 4096 * 2 * 4 * 128 * 2


def test_cohere_parallel_block_and_tied_embeddings() -> None:
    a = build("CohereForAI__aya-23-8B")
    assert a.tie_word_embeddings  # CohereConfig default
    layer = (4096 * 4096 * 2 + 2 * 4096 * 1024) + 3 * 4096 * 14336 + 4096  # attn + SwiGLU + one LayerNorm
    total = 32 * layer + 256000 * 4096 + 4096
    assert total == 8_028_033_024  # Aya 23 8B model card: 8B
    assert count_parameters(a).total == total
    assert kv_bytes_per_token(a, "bf16") == 32 * 2 * 8 * 128 * 2


def test_glm45_air_moe_router_bias_and_mtp_apart() -> None:
    a = build("zai-org__GLM-4.5-Air")
    assert a.mlp_counts() == {"dense": 1, "moe": 45}
    h = 4096
    attn = h * 96 * 128 + 2 * h * 8 * 128 + 96 * 128 * h + (96 * 128 + 2 * 8 * 128)  # + q/k/v biases
    dense = 3 * h * 10944
    routed = 128 * 3 * h * 1408
    moe = 128 * h + 128 + routed + 3 * h * 1408  # router, router correction bias, experts, one shared expert
    total = (attn + dense + 2 * h) + 45 * (attn + moe + 2 * h) + 2 * 151552 * h + h
    assert total == 106_852_251_264  # GLM-4.5-Air model card: 106B total (within 1%)
    counts = count_parameters(a)
    assert counts.total == total
    assert counts.active == total - 45 * routed * 120 // 128  # 8 of 128 experts run
    assert abs(counts.active - counts.embedding - 12e9) / 12e9 < 0.02  # card's 12B active, embeddings apart
    assert counts.mtp > 0 and len(a.mtp_layers) == 1  # the MTP layer is counted apart, not in total
    assert kv_bytes_per_token(a, "bf16") == 46 * 2 * 8 * 128 * 2 == 188_416


def test_minimax_m2_experts_of_intermediate_size() -> None:
    a = build("MiniMaxAI__MiniMax-M2")
    h = 3072
    attn = h * 6144 + 2 * h * 1024 + 6144 * h + (6144 + 1024)  # + q_norm over 48x128, k_norm over 8x128
    routed = 256 * 3 * h * 1536
    layer = attn + 256 * h + 256 + routed + 2 * h
    total = 62 * layer + 2 * 200064 * h + h
    assert total == 228_689_764_864  # MiniMax-M2 model card: 230B total (0.6%)
    counts = count_parameters(a)
    assert counts.total == total
    assert counts.active == total - 62 * routed * 248 // 256  # ~11.0B; card: 10B active (without embeddings)
    assert kv_bytes_per_token(a, "bf16") == 62 * 2 * 8 * 128 * 2 == 253_952
    assert len(a.mtp_layers) == 3  # num_mtp_modules, outside total


def test_made_up_model_type_with_standard_fields_is_sized_generically() -> None:
    cfg = {"model_type": "brand_new_lm", "hidden_size": 2048, "num_hidden_layers": 24, "num_attention_heads": 16,
           "num_key_value_heads": 4, "intermediate_size": 8192, "vocab_size": 64000, "tie_word_embeddings": True,
           "max_position_embeddings": 32768, "torch_dtype": "bfloat16"}
    a = parse_config("lab/brand-new-lm", cfg)
    assert a.architecture_source == "generic"
    assert len(a.notes) == 1 and "unknown model_type 'brand_new_lm'" in a.notes[0]
    d = 2048 // 16  # head_dim from hidden / heads
    layer = 2048 * 2048 + 2 * 2048 * 4 * d + 2048 * 2048 + 3 * 2048 * 8192 + 2 * 2048
    assert count_parameters(a).total == 24 * layer + 64000 * 2048 + 2048 == 1_590_790_144
    assert kv_bytes_per_token(a, "bf16") == 24 * 2 * 4 * 128 * 2 == 49_152
    report = size_model(a)
    assert report.architecture_source == "generic" and report.notes == list(a.notes)


def test_generic_rule_reads_text_config_experts_and_layer_types() -> None:
    text = {"model_type": "new_moe_text", "hidden_size": 1024, "num_attention_heads": 8, "num_key_value_heads": 2,
            "head_dim": 128, "moe_intermediate_size": 512, "num_local_experts": 16, "num_experts_per_tok": 2,
            "intermediate_size": 4096, "vocab_size": 1000, "sliding_window": 512, "max_position_embeddings": 8192,
            "layer_types": ["sliding_attention", "sliding_attention", "full_attention"] * 2}
    a = parse_config("lab/new-moe", {"model_type": "new_moe", "text_config": text})
    assert a.num_layers == 6  # num_hidden_layers absent: the length of layer_types
    assert a.mixer_counts() == {"sliding_attention": 4, "full_attention": 2}
    assert a.mlp_counts() == {"moe": 6}
    assert kv_bytes_per_token(a, "bf16") == 2 * 2 * 2 * 128 * 2  # only the 2 full layers grow
    expert = 3 * 1024 * 512
    counts = count_parameters(a)
    assert counts.total - counts.active == 6 * 14 * expert  # 14 of 16 experts idle per token


def test_generic_rule_names_the_missing_field() -> None:
    cfg = {"model_type": "brand_new_lm", "hidden_size": 2048, "num_hidden_layers": 24, "vocab_size": 64000,
           "intermediate_size": 8192}
    with pytest.raises(ConfigError, match="field 'num_attention_heads' is missing"):
        parse_config("lab/brand-new-lm", cfg)


def test_nemotron_h_layers_block_type_list_gives_the_same_model() -> None:
    cfg = json.loads(config_path("nvidia__Nemotron-H-56B-Base-8K").read_text())
    names = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
    listed = {k: v for k, v in cfg.items() if k not in ("hybrid_override_pattern", "num_hidden_layers")}
    listed["layers_block_type"] = [names[ch] for ch in cfg["hybrid_override_pattern"]]
    a, b = parse_config("pattern", cfg), parse_config("list", listed)
    assert b.mixer_counts() == a.mixer_counts() and b.num_layers == len(cfg["hybrid_override_pattern"])
    assert count_parameters(b).total == count_parameters(a).total
    assert kv_bytes_per_token(b) == kv_bytes_per_token(a)


def test_latent_moe_experts_run_at_routed_expert_hidden_size() -> None:
    """Kimi-K3-style latent MoE: the router sees the full hidden state, the experts work at 1,024 wide."""
    cfg = {"model_type": "latent_moe_lm", "hidden_size": 4096, "num_hidden_layers": 2, "num_attention_heads": 32,
           "num_key_value_heads": 8, "intermediate_size": 16384, "moe_intermediate_size": 2048, "num_experts": 64,
           "num_experts_per_tok": 4, "routed_expert_hidden_size": 1024, "vocab_size": 1000,
           "tie_word_embeddings": True}
    a = parse_config("lab/latent", cfg)
    moe = a.layers[0].mlp
    assert moe.latent_size == 1024
    experts = 64 * 3 * 1024 * 2048  # 402,653,184, not 64 x 3 x 4096 x 2048 = 1,610,612,736 (4x) at full width
    latent_proj = 2 * 4096 * 1024  # into and out of the latent space
    attn = 4096 * 4096 * 2 + 2 * 4096 * 1024
    layer = attn + 64 * 4096 + experts + latent_proj + 2 * 4096
    assert count_parameters(a).total == 2 * layer + 1000 * 4096 + 4096


# ------------------------------------------------------------------------------------------ quantization
def test_unknown_quantization_block_gives_null_native_and_sizes_the_rest() -> None:
    cfg = json.loads(config_path("meta-llama__Llama-3.1-8B").read_text())
    cfg["quantization_config"] = {"quant_method": "brand_new_quant", "bits": 3}
    a = parse_config("lab/quantized", cfg)
    assert a.native.unsupported and "brand_new_quant" in a.native.unsupported
    report = size_model(a)
    assert report.weights_gib["native"] is None
    assert "brand_new_quant" in (report.native_unsupported or "")
    assert any("native format unknown" in n for n in report.notes)
    # Everything else still sizes: BF16 = 8,030,261,248 params x 2 bytes.
    assert report.weights_gib["bf16"] == round(8_030_261_248 * 2 / 2**30, 2)
    assert report.kv_cache_bytes_per_token["bf16"] == 131_072
    with pytest.raises(UnsupportedQuantization):
        weight_bytes(a, "native")


def test_compressed_tensors_mxfp4_is_fp4_with_a_scale_per_32() -> None:
    cfg = json.loads(config_path("meta-llama__Llama-3.1-8B").read_text())
    cfg["quantization_config"] = {"quant_method": "compressed-tensors", "ignore": ["lm_head"], "config_groups": {
        "group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "float", "group_size": 32}}}}
    a = parse_config("lab/mxfp4", cfg)
    assert a.native.weight_format == "mxfp4" and a.native.group_size == 32
    linear = 32 * (4096 * 4096 * 2 + 2 * 4096 * 1024 + 3 * 4096 * 14336)  # 6,979,321,856 linear weights
    rest = 8_030_261_248 - linear  # embeddings, LM head, norms stay BF16
    assert weight_bytes(a, "native") == linear * (4 + 8 / 32) / 8 + rest * 2


def test_modelopt_mixed_precision_per_layer_map() -> None:
    cfg = json.loads(config_path("meta-llama__Llama-3.1-8B").read_text())
    layers = {f"model.layers.{i}.mlp.{m}": {"quant_algo": "NVFP4", "group_size": 16}
              for i in range(32) for m in ("gate_proj", "up_proj", "down_proj")}
    layers |= {f"model.layers.{i}.self_attn": {"quant_algo": "FP8"} for i in range(32)}
    hf_quant = {"producer": {"name": "modelopt"}, "quantization": {
        "quant_algo": "MIXED_PRECISION", "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"],
        "quantized_layers": layers}}
    a = parse_config("lab/mixed", cfg, hf_quant)
    assert a.native.weight_format == "mixed" and a.native.unsupported is None
    mlp = 32 * 3 * 4096 * 14336
    attn = 32 * (4096 * 4096 * 2 + 2 * 4096 * 1024)
    rest = 8_030_261_248 - mlp - attn
    assert weight_bytes(a, "native") == mlp * 4.5 / 8 + attn * 8 / 8 + rest * 2


def test_modelopt_unknown_algorithm_is_not_fatal() -> None:
    cfg = json.loads(config_path("meta-llama__Llama-3.1-8B").read_text())
    a = parse_config("lab/x", cfg, {"quantization": {"quant_algo": "W2A2_FUTURE"}})
    assert a.native.weight_format == "unknown" and "W2A2_FUTURE" in (a.native.unsupported or "")
    assert size_model(a).weights_gib["q4_k_m"] > 0


def test_family_table_and_docs_agree() -> None:
    """docs/sizing.md lists every family rule: each model_type of the table appears in it."""
    from sizing_core.config.reader import FAMILIES

    doc = (Path(__file__).resolve().parent.parent / "docs" / "sizing.md").read_text()
    missing = [t for t in FAMILIES if f"`{t}`" not in doc]
    assert not missing, missing


def test_watchlist_configs_still_come_from_family_rows() -> None:
    assert arch("meta-llama__Llama-3.1-8B").architecture_source == "family"


def test_deepseek_sparse_attention_indexer_cache_as_vllm_stores_it() -> None:
    """GLM-5 (DeepSeek sparse attention, like DeepSeek-V3.2): vLLM's indexer cache holds an FP8 key of
    index_head_dim (128 B) plus a float32 scale per 128 values (4 B) = 132 B per token and layer, whatever the
    main cache dtype. Once we counted the indexer key at the cache dtype: 128 x 2 = 256 B in BF16."""
    a = arch("zai-org__GLM-5")
    assert a.num_layers == 78
    indexer = 128 + 4
    assert kv_bytes_per_token(a, "bf16") == 78 * ((512 + 64) * 2 + indexer) == 100_152  # was 78 x 1,408 = 109,824
    # FP8 cache: FlashMLA's fp8_ds_mla latent = 512 FP8 + 4 fp32 scales (one per 128) + 64 rope values in BF16.
    assert kv_bytes_per_token(a, "fp8") == 78 * ((512 + 4 * 4 + 64 * 2) + indexer) == 61_464
    # TP does not split the latent or the indexer key.
    assert kv_bytes_per_token(a, "bf16", tp=8) == 100_152


def test_gemma3_five_sliding_to_one_global_and_tied() -> None:
    a = build("google__gemma-3-1b-it")
    kinds = [layer.mixer.kind for layer in a.layers]
    globals_ = [i for i, k in enumerate(kinds) if k == "full_attention"]
    assert globals_ == [5, 11, 17, 23]  # sliding_window_pattern 6: every 6th layer is global
    attn = 1152 * 4 * 256 + 2 * 1152 * 256 + 4 * 256 * 1152 + 2 * 256  # q, k, v, o + per-head q/k norms
    layer = attn + 3 * 1152 * 6912 + 4 * 1152
    total = 26 * layer + 262144 * 1152 + 1152  # tied embeddings
    assert total == 999_885_952  # gemma-3-1b: "1B"
    assert count_parameters(a).total == total
    assert kv_bytes_per_token(a, "bf16") == 4 * 2 * 1 * 256 * 2 == 4_096
    # 22 sliding layers hold at most their 512-token window.
    assert kv_bytes_per_request(a, 32768) == 4 * 32768 * 1024 + 22 * 512 * 1024


def test_gemma3_text_config_wrapper_uses_class_defaults() -> None:
    """A Gemma 3 multimodal config's text_config often omits fields its config class defaults (google/gemma-3-12b
    style): head_dim 256, vocab 262,208, the pattern of 6, tied embeddings. The note says which were used."""
    text = {"hidden_size": 3840, "intermediate_size": 15360, "model_type": "gemma3_text", "num_attention_heads": 16,
            "num_hidden_layers": 48, "num_key_value_heads": 8, "sliding_window": 1024}
    a = parse_config("gemma-3-12b-style", {"model_type": "gemma3", "text_config": text, "torch_dtype": "bfloat16"})
    assert a.vocab_size == 262_208 and a.tie_word_embeddings
    assert any("head_dim" in n and "vocab_size" in n for n in a.notes)
    assert kv_bytes_per_token(a, "bf16") == 8 * 2 * 8 * 256 * 2  # 48 layers / 6 = 8 global layers


def test_deepseek_v1_moe_shared_experts_and_dense_first_layer() -> None:
    a = build("deepseek-ai__deepseek-moe-16b-base")
    assert a.mlp_counts() == {"dense": 1, "moe": 27}
    h = 2048
    attn = 4 * h * h  # multi-head attention: 16 KV heads of 128
    routed = 64 * 3 * h * 1408
    moe = 64 * h + routed + 3 * h * (2 * 1408)  # router, 64 experts, 2 shared experts
    total = (attn + 3 * h * 10944 + 2 * h) + 27 * (attn + moe + 2 * h) + 2 * 102400 * h + h
    assert total == 16_375_728_128  # DeepSeekMoE 16B: 16.4B total
    counts = count_parameters(a)
    assert counts.total == total
    assert counts.active == total - 27 * routed * 58 // 64 == 2_828_650_496  # card: 2.8B activated
    assert kv_bytes_per_token(a, "bf16") == 28 * 2 * 16 * 128 * 2


def test_lfm2_short_conv_layers_hold_a_fixed_state() -> None:
    """Constructed from LFM2-1.2B's published shape (hidden 2048, 16 layers of which 6 attention, 32/8 heads,
    block_ff_dim 12288 auto-adjusted, conv_L_cache 3, vocab 65536, tied)."""
    cfg = {"model_type": "lfm2", "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32,
           "num_key_value_heads": 8, "block_ff_dim": 12288, "block_auto_adjust_ff_dim": True,
           "block_ffn_dim_multiplier": 1.0, "block_multiple_of": 256, "conv_L_cache": 3, "conv_bias": False,
           "full_attn_idxs": [2, 5, 8, 10, 12, 14], "vocab_size": 65536, "max_position_embeddings": 128000,
           "torch_dtype": "bfloat16"}
    a = parse_config("LiquidAI/LFM2-1.2B", cfg)
    assert a.mixer_counts() == {"short_conv": 10, "full_attention": 6} and a.tie_word_embeddings
    ff = 8192  # int(2 x 12288 / 3) = 8192, x 1.0, rounded up to a multiple of 256
    mlp = 3 * 2048 * ff
    conv = 3 * 2048 * 2048 + 2048 * 3 + 2048 * 2048  # in_proj (B, C, x), depthwise taps, out_proj
    attn = 2 * 2048 * 2048 + 2 * 2048 * 512 + 2 * 64  # q, o, k, v + per-head q/k norms (head_dim 64)
    total = 10 * (conv + mlp + 2 * 2048) + 6 * (attn + mlp + 2 * 2048) + 65536 * 2048 + 2048
    assert total == 1_170_340_608  # LFM2-1.2B model card: 1.17B
    assert count_parameters(a).total == total
    assert kv_bytes_per_token(a, "bf16") == 6 * 2 * 8 * 64 * 2 == 12_288
    from sizing_core.kv_cache import state_bytes_per_request
    assert state_bytes_per_request(a) == 10 * (3 - 1) * 2048 * 2  # last 2 inputs of 2,048 channels, BF16


def test_granite4_hybrid_mamba_attention_and_shared_mlp() -> None:
    """Constructed: a Granite 4.0 hybrid shape (granite-4.0-h-1b's published 40 layers, 4 of attention, hidden
    1536, 48 Mamba heads, state 128; the remaining widths chosen for the arithmetic)."""
    layer_types = ["mamba"] * 5 + ["attention"] + ["mamba"] * 9 + ["attention"] + ["mamba"] * 9 + ["attention"] \
        + ["mamba"] * 9 + ["attention"] + ["mamba"] * 4
    cfg = {"model_type": "granitemoehybrid", "hidden_size": 1536, "num_hidden_layers": 40, "layer_types": layer_types,
           "num_attention_heads": 12, "num_key_value_heads": 4, "mamba_n_heads": 48, "mamba_d_head": 64,
           "mamba_d_state": 128, "mamba_n_groups": 1, "mamba_d_conv": 4, "shared_intermediate_size": 4096,
           "num_local_experts": 0, "vocab_size": 100352, "torch_dtype": "bfloat16"}
    a = parse_config("ibm-granite/granite-4.0-h-1b-like", cfg)
    assert a.mixer_counts() == {"mamba2": 36, "full_attention": 4} and a.tie_word_embeddings
    assert kv_bytes_per_token(a, "bf16") == 4 * 2 * 4 * 128 * 2  # head_dim 1536 / 12 = 128
    from sizing_core.kv_cache import state_bytes_per_request
    inner = 48 * 64
    conv = (4 - 1) * (inner + 2 * 1 * 128) * 2  # conv over x, B, C channels
    ssm = 48 * 64 * 128 * 2
    assert state_bytes_per_request(a) == 36 * (conv + ssm)
    mamba_params = (1536 * (2 * inner + 2 * 128 + 48) + (inner + 2 * 128) * 4 + (inner + 2 * 128) + 3 * 48
                    + inner + inner * 1536)  # in_proj, conv taps, conv bias, A/D/dt, norm, out_proj
    attn = 2 * 1536 * 1536 + 2 * 1536 * 512
    mlp = 3 * 1536 * 4096
    total = 36 * (mamba_params + mlp + 2 * 1536) + 4 * (attn + mlp + 2 * 1536) + 100352 * 1536 + 1536
    assert count_parameters(a).total == total


def test_per_layer_lists_with_one_value_read_as_that_value() -> None:
    """Hunyuan-A13B style configs repeat a value per layer (``moe_topk: [8, 8, ...]``)."""
    cfg = {"model_type": "hunyuan_v1_moe", "hidden_size": 1024, "num_hidden_layers": 2, "num_attention_heads": 8,
           "num_key_value_heads": 2, "num_experts": 8, "moe_topk": [2, 2], "moe_intermediate_size": [512, 512],
           "intermediate_size": 2048, "vocab_size": 1000, "tie_word_embeddings": True}
    a = parse_config("hunyuan-like", cfg)
    assert a.layers[0].mlp.top_k == 2 and a.layers[0].mlp.expert_intermediate == 512
    with pytest.raises(ConfigError, match="moe_topk"):
        parse_config("hunyuan-like", {**cfg, "moe_topk": [2, 4]})


def test_minimax_attn_type_list_linear_layers_hold_a_state() -> None:
    """Constructed, MiniMax-Text-01/M1 style: attn_type_list 0 = lightning linear attention, 1 = softmax."""
    cfg = {"model_type": "minimax_m1", "hidden_size": 1024, "num_hidden_layers": 8, "num_attention_heads": 8,
           "num_key_value_heads": 2, "head_dim": 128, "attn_type_list": [0, 0, 0, 1] * 2, "num_local_experts": 4,
           "num_experts_per_tok": 2, "intermediate_size": 512, "vocab_size": 1000, "torch_dtype": "bfloat16"}
    a = parse_config("minimax-like", cfg)
    assert a.mixer_counts() == {"linear_attention": 6, "full_attention": 2}
    assert kv_bytes_per_token(a, "bf16") == 2 * 2 * 2 * 128 * 2  # only the 2 softmax layers grow
    from sizing_core.kv_cache import state_bytes_per_request
    assert state_bytes_per_request(a) == 6 * 8 * 128 * 128 * 2  # heads x d x d per linear layer, BF16
    assert state_bytes_per_request(a, tp=4) == 6 * 2 * 128 * 128 * 2  # split by heads


@pytest.mark.parametrize("name", [p.stem for p in sorted((FIXTURES.parent.parent / "pipeline" / "replay" / "hub" /
                                                           "configs").glob("*.json"))
                                  if not p.name.endswith(".hf_quant_config.json")])
def test_a_renamed_model_type_is_read_by_its_fields(name: str) -> None:
    """Blind-set proxy: every reference config with its model_type renamed to one we have never seen still sizes
    (the structure is read from its fields: MLA, Gated DeltaNet, Mamba2 hybrids, ...), with the same KV bytes per
    token as its family row and parameters within 2% (what a family row adds: q/k norms, biases, 4 norms)."""
    cfg = json.loads(config_path(name).read_text())
    known = parse_config(name, cfg)
    renamed = json.loads(config_path(name).read_text())
    text = renamed["text_config"] if isinstance(renamed.get("text_config"), dict) else renamed
    text["model_type"] = "never_seen_before"
    a = parse_config(name, renamed)
    assert a.architecture_source == "generic" and a.notes
    assert kv_bytes_per_token(a, "bf16") == kv_bytes_per_token(known, "bf16")
    assert count_parameters(a).total == pytest.approx(count_parameters(known).total, rel=0.02)


def test_falcon_h1_parallel_attention_and_mamba_in_every_layer() -> None:
    """Constructed (Falcon-H1 field names as its config class has them): both caches in every layer."""
    cfg = {"model_type": "falcon_h1", "hidden_size": 1024, "num_hidden_layers": 4, "num_attention_heads": 8,
           "num_key_value_heads": 2, "head_dim": 128, "intermediate_size": 2048, "mamba_d_ssm": 1536,
           "mamba_n_heads": 24, "mamba_d_head": 64, "mamba_d_state": 128, "mamba_n_groups": 1, "mamba_d_conv": 4,
           "vocab_size": 1000, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
    a = parse_config("falcon-h1-like", cfg)
    assert a.mixer_counts() == {"parallel_hybrid": 4}
    assert kv_bytes_per_token(a, "bf16") == 4 * 2 * 2 * 128 * 2
    from sizing_core.kv_cache import state_bytes_per_request
    conv = (4 - 1) * (1536 + 2 * 128) * 2
    ssm = 24 * 64 * 128 * 2
    assert state_bytes_per_request(a) == 4 * (conv + ssm)


def test_gemma3n_kv_sharing_and_per_layer_embeddings() -> None:
    """Constructed with Gemma3nTextConfig's defaults (the E4B text model): 35 layers, 4 sliding : 1 global, the last
    15 layers share KV, per-layer embeddings of 262,144 x 35 x 256."""
    layer_types = (["sliding_attention"] * 4 + ["full_attention"]) * 7
    cfg = {"model_type": "gemma3n", "text_config": {
        "model_type": "gemma3n_text", "hidden_size": 2048, "num_hidden_layers": 35, "intermediate_size": [16384] * 35,
        "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 256, "vocab_size": 262400,
        "vocab_size_per_layer_input": 262144, "hidden_size_per_layer_input": 256, "layer_types": layer_types,
        "sliding_window": 512, "num_kv_shared_layers": 15, "laurel_rank": 64, "altup_num_inputs": 4,
        "max_position_embeddings": 32768}}
    a = parse_config("google/gemma-3n-E4B-like", cfg)
    # Layers 20..34 reuse KV: of the first 20, layers 4, 9, 14, 19 are global.
    assert kv_bytes_per_token(a, "bf16") == 4 * 2 * 2 * 256 * 2 == 8_192
    assert kv_bytes_per_request(a, 32768) == 4 * 32768 * 2048 + 16 * 512 * 2048
    h, hp, r, k = 2048, 256, 64, 4
    attn = h * 8 * 256 + 2 * h * 2 * 256 + 8 * 256 * h + 2 * 256
    layer = attn + 3 * h * 16384 + 4 * h
    extra_layer = (h + k * k + k ** 3 + h * k + h) + (2 * h * r + h) + (2 * h * hp + h)
    per_layer_embeddings = 262144 * 35 * hp
    extra_model = per_layer_embeddings + h * 35 * hp + hp + 2 * (k - 1) * h * h
    total = 35 * (layer + extra_layer) + extra_model + 262400 * h + h
    assert count_parameters(a).total == total
    assert per_layer_embeddings == 2_348_810_240  # the part Gemma 3n can keep off the accelerator
