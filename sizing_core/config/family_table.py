"""Every ``model_type`` we know, in one table (``FAMILIES``): the builder of its layers, what differs from the
generic decoder.
``docs/sizing.md`` lists the same rows. A data table: the builders live in ``sizing_core/config/families.py`` and
``sizing_core/config/families_classic.py``; config-class defaults are ``data/family_defaults.json``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .defaults import family_data
from .families import (
    decilm_layers,
    deepseek_layers,
    deepseek_v4_layers,
    falcon_h1_layers,
    gemma3n_layers,
    gemma4_layers,
    gpt_oss_layers,
    granite_hybrid_layers,
    kimi_linear_layers,
    lfm2_layers,
    llama4_layers,
    mimo_v2_layers,
    nemotron_h_layers,
    qwen_hybrid_layers,
)
from .families_classic import (
    cogvlm_layers,
    dbrx_layers,
    deepseek_vl2_layers,
    falcon_layers,
    family_decoder,
    hunyuan_layers,
)
from .fields import Fields, Layers, generic_layers, standard
from .recurrent import (
    jamba_layers,
    mamba2_layers,
    mamba_layers,
    mllama_text_layers,
    rwkv_layers,
    xlstm_layers,
)


@dataclass(frozen=True)
class Family:
    """One row of the family table: how to build the layers and what differs from the generic decoder. The
    defaults of the family's config class (what its ``config.json`` may leave out) are data:
    ``data/family_defaults.json``, read by ``config.defaults.normalise`` before any builder runs."""

    build: Callable[[Fields], Layers]
    rule: str


_GENERIC_RULE = "standard decoder (the generic rule)"

#: Every model_type we know, in one table. ``docs/sizing.md`` lists the same rows.
FAMILIES: dict[str, Family] = {
    # --- the standard decoder, switches read from the config
    **{t: Family(generic_layers, _GENERIC_RULE) for t in (
        "llama", "mistral", "ministral", "ministral3", "mixtral", "mimo", "step3p7",
        "granite", "granitemoe", "granitemoeshared", "smollm3", "seed_oss", "hunyuan_v1_dense", "glm",
        "helium")},
    "exaone4": Family(standard(qk_norm=True), "per-head q/k norm; sliding_window_pattern such as \"LLLG\" "
                                             "(L sliding, G global) or layer_types"),
    "glm4": Family(standard(norms=4), "post-attention and post-MLP norms (4 per layer); fused gate_up"),
    "nemotron": Family(standard(gated=False, norms=4), "two-matrix squared-ReLU MLP; LayerNorm1P with bias"),
    "arcee": Family(standard(gated=False), "two-matrix ReLU² MLP (up, down)"),
    "apertus": Family(standard(gated=False, qk_norm=True), "two-matrix xIELU MLP; per-head q/k norm"),
    "qwen2": Family(standard(attn_bias=True, o_bias=False), "q/k/v biases always (Qwen2 modelling code)"),
    "qwen2_moe": Family(standard(attn_bias=True, o_bias=False, shared_gate=True),
                        "q/k/v biases; shared expert with a sigmoid gate"),
    "qwen3": Family(standard(qk_norm=True), "per-head q/k RMSNorm"),
    **{t: Family(standard(qk_norm=True), "per-head q/k RMSNorm; experts of moe_intermediate_size") for t in (
        "qwen3_moe", "qwen3_vl_text", "qwen3_vl_moe_text")},
    "phi3": Family(standard(fused_qkv=True),
                   "fused qkv_proj; a sliding_window >= max_position_embeddings is full attention (Phi-3.5/4-mini)"),
    "phimoe": Family(standard(norms=4), "LayerNorm with bias (2 per layer, weight + bias); experts of intermediate_size"),
    "olmo2": Family(standard(qk_norm=True, qk_norm_full=True), "q_norm over all heads (H*d), k_norm over Hkv*d"),
    "olmo3": Family(standard(qk_norm=True, qk_norm_full=True),
                    "as OLMo 2, with sliding/full layer_types"),
    "gemma": Family(standard(), "GeGLU MLP; tied embeddings"),
    "gemma2": Family(standard(norms=4),
                     "alternating sliding (even layers) and global attention; 4 norms per layer; tied embeddings"),
    "gemma3_text": Family(standard(qk_norm=True, norms=4),
                          "5 sliding : 1 global (sliding_window_pattern 6 or layer_types); per-head q/k norm; "
                          "4 norms per layer; tied embeddings; Gemma3TextConfig defaults for omitted fields"),
    "cohere": Family(standard(qk_norm_full=True, norms=1),
                     "parallel attention + MLP behind one LayerNorm; optional q/k LayerNorm over all heads; tied "
                     "embeddings"),
    "cohere2": Family(standard(norms=1), "parallel block, one LayerNorm; 3 sliding : 1 global (sliding_window_pattern "
                                         "4 or layer_types); tied embeddings"),
    "starcoder2": Family(standard(gated=False, attn_bias=None, norms=4),
                         "two-matrix MLP (c_fc, c_proj) and biases everywhere when use_bias; LayerNorm with bias"),
    "internlm2": Family(standard(fused_qkv=True), "fused wqkv; biases when `bias`"),
    "internlm3": Family(generic_layers, _GENERIC_RULE),
    "deepseek": Family(generic_layers, "DeepSeek V1 MoE: multi-head attention, n_routed_experts + n_shared_experts of "
                                 "moe_intermediate_size after first_k_dense_replace dense layers"),
    "minicpm": Family(generic_layers, "standard decoder; embedding/residual scales change no shapes"),
    "minicpm3": Family(lambda c: deepseek_layers(c), "MLA attention (q_lora/kv_lora) with a dense MLP"),
    **{t: Family(standard(qk_norm=True, qk_norm_full=True, router_bias=True),
                 "experts of intermediate_size; q/k RMSNorm over all heads; router correction bias; MTP modules "
                 "counted apart") for t in ("minimax_m2", "minimax_m3")},
    **{t: Family(standard(), "attn_type_list: 0 = lightning linear attention (fixed heads x d x d state), 1 = "
                             "softmax attention; experts of intermediate_size") for t in (
        "minimax", "minimax_m1", "minimax_text_01")},
    "glm4_moe": Family(standard(attn_bias=True, o_bias=False, router_bias=True),
                       "GLM-4.5/4.6/4.7: q/k/v biases, router correction bias, first_k_dense_replace dense layers, "
                       "num_nextn_predict_layers MTP layer counted apart"),
    "ernie4_5": Family(standard(), "standard decoder (use_bias switches biases)"),
    "ernie4_5_moe": Family(standard(router_bias=True),
                           "moe_num_experts/moe_k/moe_num_shared_experts; dense before moe_layer_start_index"),
    "hunyuan_v1_moe": Family(standard(qk_norm=True), "per-head q/k norm; experts of moe_intermediate_size"),
    "bailing_moe": Family(standard(fused_qkv=True, router_bias=True), "fused query_key_value; shared experts"),
    "gpt_oss": Family(gpt_oss_layers, "q/k/v/o biases, attention sinks, expert biases, router bias; sliding/full layer_types"),
    **{t: Family(deepseek_layers, "MLA: one (kv_lora_rank + qk_rope_head_dim) latent per token, replicated on every TP "
                            "rank; DSA indexer key when index_head_dim") for t in (
        "deepseek_v2", "deepseek_v3", "deepseek_v32", "kimi_k2", "glm4_moe_lite", "glm_moe_dsa")},
    "deepseek_v4": Family(deepseek_v4_layers, "compressed sparse attention (compress_ratios, sliding window, indexer)"),
    **{t: Family(qwen_hybrid_layers, "Gated DeltaNet layers, gated full attention every full_attention_interval") for t in (
        "qwen3_next", "qwen3_5_text", "qwen3_5_moe_text")},
    "kimi_linear": Family(kimi_linear_layers, "Kimi Delta Attention + MLA layers from linear_attn_config (1-based)"),
    "nemotron_h": Family(nemotron_h_layers, "Mamba2 / attention / MLP / MoE blocks from hybrid_override_pattern or "
                                      "layers_block_type; latent MoE width moe_latent_size"),
    "nemotron-nas": Family(decilm_layers, "DeciLM per-layer block_configs"),
    **{t: Family(lfm2_layers, "short-convolution (fixed state (K-1) x hidden) and GQA layers from layer_types / "
                        "full_attn_idxs; MLP width adjusted as Lfm2Config (2/3, multiplier, multiple of 256); tied "
                        "embeddings") for t in ("lfm2", "lfm2_moe")},
    "falcon_h1": Family(falcon_h1_layers, "attention and Mamba2 in parallel in every layer (KV per token and a fixed "
                                    "state per request), then a SwiGLU MLP"),
    "gemma3n_text": Family(gemma3n_layers, "4 sliding : 1 global; the last num_kv_shared_layers cache nothing (KV sharing); "
                                     "per-layer embeddings, AltUp and LAuReL counted as extra parameters (kept at 16 "
                                     "bits in every format); tied embeddings"),
    "granitemoehybrid": Family(granite_hybrid_layers, "Granite 4.0: Mamba2 / attention layer_types, shared MLP of "
                                                "shared_intermediate_size in every layer, experts beside it"),
    "llama4_text": Family(llama4_layers, "chunked local attention on 3 of 4 layers; interleaved MoE with a shared expert"),
    "gemma4_text": Family(gemma4_layers, "sliding and global layers with their own KV shapes; keys double as values"),
    "mimo_v2_flash": Family(mimo_v2_layers, "hybrid_layer_pattern: sliding layers with their own shapes"),
    # --- GPT-2-era and remote-code families; their switches (biases, gated MLP, norm kind, learned
    # positions, LM-head bias) and width rules are data (data/family_defaults.json), each row citing its source
    **{t: Family(family_decoder(t), family_data(t)["rule"]) for t in (
        "gpt2", "gpt_bigcode", "gptj", "gpt_neox", "bloom", "phi", "phi-msft", "mixformer-sequential", "opt", "mpt",
        "stablelm", "stablelm_epoch", "qwen", "baichuan", "chatglm", "internlm", "orion", "molmo", "persimmon",
        "bert")},
    "cogvlm": Family(cogvlm_layers, family_data("cogvlm")["rule"]),
    "olmo": Family(family_decoder("olmo"), "standard decoder; non-parametric LayerNorm (no weights)"),
    "olmoe": Family(standard(qk_norm=True, qk_norm_full=True), family_data("olmoe")["rule"]),
    "exaone_moe": Family(standard(qk_norm=True), family_data("exaone_moe")["rule"]),
    "hunyuan": Family(hunyuan_layers, family_data("hunyuan")["rule"]),
    **{t: Family(falcon_layers, family_data(t)["rule"]) for t in ("falcon", "RefinedWeb", "RefinedWebModel")},
    "dbrx": Family(dbrx_layers, family_data("dbrx")["rule"]),
    **{t: Family(standard(attn_bias=True, o_bias=False), family_data(t)["rule"]) for t in ("qwen2_vl", "qwen2_5_vl")},
    **{t: Family(standard(attn_bias=True, o_bias=False), "Qwen2 text of Qwen2-VL / Qwen2.5-VL (q/k/v biases)")
       for t in ("qwen2_vl_text", "qwen2_5_vl_text")},
    "phi3_v": Family(standard(fused_qkv=True), family_data("phi3_v")["rule"]),
    "deepseek_vl_v2": Family(deepseek_vl2_layers, family_data("deepseek_vl_v2")["rule"]),
    "mllama_text_model": Family(mllama_text_layers, family_data("mllama_text_model")["rule"]),
    # --- without attention: a constant state per sequence
    **{t: Family(rwkv_layers(v), family_data(t)["rule"]) for t, v in (("rwkv", 4), ("rwkv5", 5), ("rwkv6", 6),
                                                                    ("rwkv7", 7))},
    **{t: Family(mamba_layers, family_data(t)["rule"]) for t in ("mamba", "falcon_mamba")},
    "mamba2": Family(mamba2_layers, family_data("mamba2")["rule"]),
    "xlstm": Family(xlstm_layers, family_data("xlstm")["rule"]),
    "jamba": Family(jamba_layers, family_data("jamba")["rule"]),
}
