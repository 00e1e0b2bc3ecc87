"""Builders for families whose shapes depend on a switch of their config rather than on a number: Falcon (KV
heads and norms from ``new_decoder_architecture`` / ``multi_query`` / ``parallel_attn``), DBRX (attention and
experts in nested ``attn_config`` / ``ffn_config``), Hunyuan (cross-layer KV sharing), OPT (an embedding narrower
than the decoder). Every other family is the standard decoder with the switches of ``data/family_defaults.json``
(``config.defaults.decoder_switches``). Config blocks arrive normalised (``config.defaults.normalise``)."""

from __future__ import annotations

from collections.abc import Callable

from ..layers import DecoderLayer, DenseMLP, FullAttention, MoE
from .defaults import decoder_switches
from .families import deepseek_layers
from .fields import (
    Fields,
    Layers,
    attention_kinds,
    attention_mixer,
    decoder,
    gqa_kwargs,
    mlp_for_layer,
    read_num_layers,
)


def family_decoder(model_type: str, **fixed: object) -> Callable[[Fields], Layers]:
    """The standard decoder with the switches the family data fixes (biases, gated MLP, norms), plus ``fixed``."""
    return lambda c: decoder(c, **{**decoder_switches(c, model_type), **fixed})


def falcon_layers(c: Fields) -> Layers:
    """Falcon (and its remote-code ancestors RefinedWeb / RefinedWebModel): fused query_key_value whose KV heads are
    ``num_kv_heads`` under ``new_decoder_architecture``, one under ``multi_query``, else all heads (transformers
    modeling_falcon.py ``FalconAttention``); LayerNorms (weight + bias): two per layer unless the block is parallel
    with one (``num_ln_in_parallel_attn``, 2 by default under the new architecture); biases when ``bias``.
    RefinedWeb (falcon-40b's own code) always has the new layout: n_head_kv groups, ln_attn + ln_mlp."""
    model_type = str(c.raw("model_type", "falcon"))
    heads = c.int("num_attention_heads")
    new = c.bool("new_decoder_architecture") or model_type == "RefinedWeb"
    if new:
        kv = c.int("num_kv_heads", heads) if model_type != "RefinedWeb" else c.int("num_kv_heads", 1)
    elif c.bool("multi_query", True):
        kv = 1
    else:
        kv = c.int("num_kv_heads", heads)
    if not c.bool("parallel_attn", True):
        norms = 2
    elif new:
        norms = c.int("num_ln_in_parallel_attn", 2)
    else:
        norms = 1
    bias = c.bool("bias")
    attn = FullAttention(num_heads=heads, num_kv_heads=kv, head_dim=c.int("hidden_size") // heads, fused_qkv=True,
                         bias=bias, o_bias=bias)
    mlp = DenseMLP(intermediate=c.int("intermediate_size"), gated=False, bias=bias)
    return [DecoderLayer(mixer=attn, mlp=mlp, norms=2 * norms) for _ in range(read_num_layers(c))], []


def dbrx_layers(c: Fields) -> Layers:
    """DBRX: fused Wqkv with ``attn_config.kv_n_heads`` KV heads (class default 1), routed GLU experts from
    ``ffn_config`` (``moe_num_experts``, ``moe_top_k``, ``ffn_hidden_size`` per expert), LayerNorm without bias."""
    attn_cfg = c.sub("attn_config") if isinstance(c.raw("attn_config"), dict) else Fields(c.model, {}, "attn_config.")
    ffn = c.sub("ffn_config") if isinstance(c.raw("ffn_config"), dict) else Fields(c.model, {}, "ffn_config.")
    heads = c.int("num_attention_heads")
    attn = FullAttention(num_heads=heads, num_kv_heads=attn_cfg.int("kv_n_heads", 1),
                         head_dim=c.int("hidden_size") // heads, fused_qkv=True)
    moe = MoE(num_experts=ffn.int("moe_num_experts", 4), top_k=ffn.int("moe_top_k", 1),
              expert_intermediate=ffn.int("ffn_hidden_size", 3584))
    return [DecoderLayer(mixer=attn, mlp=moe) for _ in range(read_num_layers(c))], []


def hunyuan_layers(c: Fields) -> Layers:
    """Hunyuan-A13B (remote code ``hunyuan``): per-head q/k norms, routed experts with a shared MLP of
    ``num_shared_expert`` x ``intermediate_size`` beside them (``use_mixed_mlp_moe``); with ``use_cla`` only the
    first layer of every ``cla_share_factor`` computes K and V, the others reuse it (no projections, no cache)."""
    n = read_num_layers(c)
    share = c.int("cla_share_factor", 1) if c.bool("use_cla") else 1
    kinds = attention_kinds(c, n)
    layers = []
    for i in range(n):
        gqa = gqa_kwargs(c, qk_norm=c.bool("use_qk_norm"), kv_shared=i % share != 0)
        mlp = mlp_for_layer(c, i, n)
        if isinstance(mlp, MoE) and c.bool("use_mixed_mlp_moe") and not mlp.shared_intermediate:
            mlp = mlp.model_copy(update={"shared_intermediate": c.int("intermediate_size") * c.int("num_shared_expert", 1)})
        layers.append(DecoderLayer(mixer=attention_mixer(c, kinds[i], **gqa), mlp=mlp))
    return layers, []


def deepseek_vl2_layers(c: Fields) -> Layers:
    """DeepSeek-VL2 / DeepSeek-OCR-2's language model (DeepseekV2 in ``language_config``): MLA when ``use_mla`` and a
    ``kv_lora_rank`` are set, else multi-head attention of hidden / heads (OCR-2 sets qk_*_head_dim to 0); the
    DeepSeek-V2 MoE either way."""
    if c.bool("use_mla", True) and c.has("kv_lora_rank"):
        return deepseek_layers(c)
    return decoder(c)


def cogvlm_layers(c: Fields) -> Layers:
    """CogVLM / CogVLM2: a Llama decoder (GQA from num_multi_query_heads). ``CogVLMForCausalLM`` adds a visual expert
    to every layer: its own fused qkv and dense for image tokens and its own MLP (modelled as a second attention
    copy and two token-routed MLPs, one active per token); the video/caption model (``CogVLMVideoForCausalLM``) has
    none."""
    archs = c.raw("architectures")
    if not isinstance(archs, list) or "CogVLMForCausalLM" not in archs:
        return decoder(c)
    n = read_num_layers(c)
    attn = FullAttention(**gqa_kwargs(c, fused_qkv=True, expert_copies=2))
    mlp = MoE(num_experts=2, top_k=1, expert_intermediate=c.int("intermediate_size"))
    return [DecoderLayer(mixer=attn, mlp=mlp) for _ in range(n)], []
