"""Models without attention: RWKV-4, Mamba-2 only, xLSTM, and Jamba's Mamba layers; parameters and the
constant state per sequence derived by hand. Also a Whisper-style audio tower (its own config, counted apart). The configs are constructed with public models' shapes
(RWKV/rwkv-4-169m-pile, mistralai/Mamba-Codestral-7B-v0.1, NX-AI/xLSTM-7b, ai21labs/Jamba-v0.1) in their
config classes' key names (transformers v4.57.1); the genuine RWKV-5 and Mamba configs are in test_configs_ii.py."""

from __future__ import annotations

from sizing_core import size_model
from sizing_core.config.reader import parse_config


def test_rwkv4() -> None:
    h, a, inner, layers, vocab = 768, 768, 3072, 12, 50277
    config = {"model_type": "rwkv", "hidden_size": h, "attention_hidden_size": a, "intermediate_size": inner,
              "num_hidden_layers": layers, "vocab_size": vocab, "context_length": 1024, "tie_word_embeddings": False}
    report = size_model(parse_config("rwkv-4", config))
    # per layer: ln1, ln2 (weight + bias); time_decay, time_first; time_mix k/v/r; key/value/receptance/output;
    # channel-mix: time_mix k/r, key (h -> I), receptance (h -> h), value (I -> h)
    layer = 4 * h + 2 * a + 3 * h + 4 * a * h + 2 * h + 2 * inner * h + h * h
    assert report.parameter_counts.total == 2 * vocab * h + 2 * h + 2 * h + layers * layer  # emb, head, ln0, ln_out
    assert report.kv_cache_bytes_per_token["bf16"] == 0
    # state: the time-mix's and channel-mix's token shifts (h each) and numerator, denominator, max (a each), fp32
    assert report.recurrent_state_bytes_per_request == layers * (2 * h + 3 * a) * 4


def test_mamba2_only() -> None:
    config = {"model_type": "mamba2", "hidden_size": 4096, "num_heads": 128, "head_dim": 64, "n_groups": 8,
              "state_size": 128, "num_hidden_layers": 64, "vocab_size": 32768, "expand": 2, "conv_kernel": 4,
              "tie_word_embeddings": False}
    report = size_model(parse_config("codestral-mamba", config))
    inner, conv = 128 * 64, 128 * 64 + 2 * 8 * 128
    # per layer: conv state (K - 1) x (I + 2 G N) and SSM heads x head_dim x N, both BF16 (the config's dtype)
    assert report.recurrent_state_bytes_per_request == 64 * ((4 - 1) * conv * 2 + 128 * 64 * 128 * 2)
    layer = (2 * inner + 2 * 8 * 128 + 128) * 4096 + conv * 4 + conv + 3 * 128 + inner + 4096 * inner + 4096
    assert report.parameter_counts.total == 2 * 32768 * 4096 + 64 * layer + 4096


def test_xlstm() -> None:
    config = {"model_type": "xlstm", "embedding_dim": 4096, "num_blocks": 32, "num_heads": 8, "vocab_size": 50304,
              "qk_dim_factor": 0.5, "v_dim_factor": 1.0, "ffn_proj_factor": 2.667, "ffn_round_up_to_multiple_of": 64,
              "tie_word_embeddings": False}
    report = size_model(parse_config("xlstm-7b", config))
    h, qk, v = 4096, 2048, 4096
    ffn = 10944  # 2.667 x 4096 = 10,924.0 rounded up to a multiple of 64
    layer = 2 * qk * h + 2 * v * h + 2 * 8 * h + 2 * 8 + v + h * v + 3 * ffn * h + 2 * h
    assert report.parameter_counts.total == 2 * 50304 * h + 32 * layer + h
    # per head: the matrix memory (2048/8) x (4096/8), the normaliser 256 and the max 1, float32
    assert report.recurrent_state_bytes_per_request == 32 * 8 * (256 * 512 + 256 + 1) * 4


def test_jamba_layers() -> None:
    config = {"model_type": "jamba", "hidden_size": 4096, "num_hidden_layers": 32, "intermediate_size": 14336,
              "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 65536, "num_experts": 16,
              "num_experts_per_tok": 2, "attn_layer_period": 8, "attn_layer_offset": 4, "expert_layer_period": 2,
              "expert_layer_offset": 1, "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2,
              "mamba_dt_rank": 256, "tie_word_embeddings": False}
    report = size_model(parse_config("jamba", config))
    assert report.layers == {"total": 32, "full_attention": 4, "mamba": 28}
    assert report.mlp_layers == {"dense": 16, "moe": 16}
    assert report.kv_cache_bytes_per_token["bf16"] == 4 * 8 * 128 * 2 * 2  # attention on layers 4, 12, 20, 28
    # 28 Mamba layers: conv (4 - 1) x 8192 and SSM 8192 x 16, BF16
    assert report.recurrent_state_bytes_per_request == 28 * (3 * 8192 + 8192 * 16) * 2


def test_whisper_style_audio_tower() -> None:
    """Constructed Qwen2-Audio-shaped config (qwen2_audio: text_config + audio_config with Whisper-large-v3's
    encoder shapes): the audio encoder is counted from its own config, reported as audio, included in total."""
    d, layers, ffn, mel, text_h = 1280, 32, 5120, 128, 4096
    config = {"model_type": "qwen2_audio",
              "audio_config": {"model_type": "qwen2_audio_encoder", "d_model": d, "encoder_layers": layers,
                               "encoder_attention_heads": 20, "encoder_ffn_dim": ffn, "num_mel_bins": mel,
                               "max_source_positions": 1500},
              "text_config": {"model_type": "qwen2", "hidden_size": text_h, "intermediate_size": 11008,
                              "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
                              "vocab_size": 156032}}
    counts = size_model(parse_config("qwen2-audio", config)).parameter_counts
    # two conv1d (kernel 3, biases), 1500 positions; per layer q/v/o with bias, k without, fc1/fc2, two LayerNorms;
    # a final LayerNorm; the projector into the text width
    layer = 3 * (d * d + d) + d * d + (ffn * d + ffn) + (d * ffn + d) + 4 * d
    encoder = mel * d * 3 + d + d * d * 3 + d + 1500 * d + layers * layer + 2 * d
    assert counts.audio == encoder + (d * text_h + text_h) and counts.vision == 0
    assert counts.total > counts.audio + 7e9
