"""Builders for models without attention (RWKV 4-7, Mamba, Mamba-2, xLSTM), Jamba's attention / Mamba hybrid and
Mllama's cross-attention text model. Config blocks arrive normalised (``config.defaults.normalise``)."""

from __future__ import annotations

import math

from ..errors import ConfigError
from ..layers import MLSTM, CrossAttention, DecoderLayer, DenseMLP, Mamba, Mamba2, MoE, RWKVTimeMix
from ..layers.rnn import rwkv7_low_rank
from ..units import DTYPE_BYTES
from .fields import (
    Fields,
    Layers,
    attention_kinds,
    attention_mixer,
    gqa_kwargs,
    mlp_for_layer,
    read_num_layers,
)


def _dtype_bytes(c: Fields) -> float:
    return DTYPE_BYTES.get(str(c.raw("dtype", c.raw("torch_dtype", "bfloat16"))).lower(), 2)


def rwkv_layers(version: int):  # type: ignore[no-untyped-def]
    """RWKV of ``version``: time-mix (``RWKVTimeMix``) and a two-matrix channel-mix (key, value) per layer, two
    LayerNorms (weight and bias) per layer. Channel-mix width ``intermediate_size``; absent: 4 x hidden for v4/v7,
    int(3.5 x hidden) // 32 x 32 for v5/v6 (their configuration files)."""

    def build(c: Fields) -> Layers:
        h = c.int("hidden_size")
        a = c.int("attention_hidden_size", h)
        head = c.first_int("head_size", "head_dim", default=64) if version >= 5 else a
        if a % head:
            raise ConfigError(c.model, "head_size", f"{head} does not divide attention_hidden_size {a}")
        width = c.int("intermediate_size", 4 * h if version in (4, 7) else int(h * 3.5) // 32 * 32)
        big = 2 if h >= 4096 else 1  # RWKV-LM x060 doubles its LoRA widths for 4096-wide models
        lora = dict(mix_lora=32 * big, decay_lora=64 * big) if version == 6 else dict(
            decay_lora=c.int("decay_low_rank_dim", rwkv7_low_rank(h, 1.8, 0.5)),
            a_lora=c.int("a_low_rank_dim", rwkv7_low_rank(h, 1.8, 0.5)),
            v_lora=c.int("v_low_rank_dim", rwkv7_low_rank(h, 1.3, 0.5)),
            gate_lora=c.int("gate_low_rank_dim", rwkv7_low_rank(h, 0.6, 0.8))) if version == 7 else {}
        mlp = DenseMLP(intermediate=width, gated=False)
        return [DecoderLayer(mixer=RWKVTimeMix(version=version, hidden=h, attention_hidden=a, head_size=head,
                                               first_layer=i == 0, **lora), mlp=mlp, norms=4)
                for i in range(read_num_layers(c))], []

    return build


def _mamba(c: Fields, prefix: str = "") -> Mamba:
    """A Mamba (v1) mixer from MambaConfig keys, or Jamba's ``mamba_``-prefixed ones."""
    h = c.int("hidden_size")
    expand = c.number(f"{prefix}expand", 2)
    inner = c.int("intermediate_size") if not prefix and c.has("intermediate_size") else max(1, int(expand * h))
    rank = c.raw(f"{prefix}dt_rank", c.raw("time_step_rank", "auto"))
    dtype = _dtype_bytes(c)
    return Mamba(intermediate=inner, state_size=c.int(f"{prefix}d_state" if prefix else "state_size", 16),
                 conv_kernel=c.int(f"{prefix}d_conv" if prefix else "conv_kernel", 4),
                 dt_rank=math.ceil(h / 16) if rank == "auto" else c.first_int(f"{prefix}dt_rank", "time_step_rank"),
                 bias=c.bool(f"{prefix}proj_bias" if prefix else "use_bias"),
                 conv_bias=c.bool(f"{prefix}conv_bias" if prefix else "use_conv_bias", True),
                 conv_dtype_bytes=dtype, ssm_dtype_bytes=dtype)


def mamba_layers(c: Fields) -> Layers:
    """Mamba / Falcon-Mamba: one Mamba mixer and one RMSNorm per layer, no MLP."""
    mixer = _mamba(c)
    return [DecoderLayer(mixer=mixer, norms=1) for _ in range(read_num_layers(c))], []


def mamba2_layers(c: Fields) -> Layers:
    """Mamba-2 (Mamba2Config, Codestral Mamba): one Mamba2 mixer and one RMSNorm per layer, no MLP."""
    h = c.int("hidden_size")
    head_dim = c.int("head_dim", 64)
    heads = c.int("num_heads", max(1, int(c.number("expand", 2) * h) // head_dim))
    dtype = _dtype_bytes(c)
    mixer = Mamba2(num_heads=heads, head_dim=head_dim, n_groups=c.int("n_groups", 1), state_size=c.int("state_size", 128),
                   conv_kernel=c.int("conv_kernel", 4), conv_bias=c.bool("use_conv_bias", True),
                   conv_dtype_bytes=dtype, ssm_dtype_bytes=dtype)
    return [DecoderLayer(mixer=mixer, norms=1) for _ in range(read_num_layers(c))], []


def xlstm_layers(c: Fields) -> Layers:
    """xLSTM (xLSTMConfig, NX-AI/xLSTM-7b): per block an RMSNorm, an mLSTM layer (q/k of int(hidden x
    qk_dim_factor), v of int(hidden x v_dim_factor)), an RMSNorm and a gated FFN of hidden x ffn_proj_factor rounded
    up to ffn_round_up_to_multiple_of."""
    h = c.int("hidden_size")
    qk = max(1, int(h * c.number("qk_dim_factor", 0.5)))
    v = max(1, int(h * c.number("v_dim_factor", 1.0)))
    multiple = c.int("ffn_round_up_to_multiple_of", 64)
    ffn = math.ceil(h * c.number("ffn_proj_factor", 2.667) / multiple) * multiple
    mixer = MLSTM(num_heads=c.int("num_heads", 8), qk_dim=qk, v_dim=v, bias=c.bool("use_bias"))
    mlp = DenseMLP(intermediate=ffn, bias=c.bool("use_bias"))
    return [DecoderLayer(mixer=mixer, mlp=mlp) for _ in range(read_num_layers(c))], []


def jamba_layers(c: Fields) -> Layers:
    """Jamba: attention on layers where i % attn_layer_period == attn_layer_offset (8 / 4), Mamba elsewhere (its
    dt/B/C RMSNorms add dt_rank + 2 d_state weights); experts where i % expert_layer_period ==
    expert_layer_offset (2 / 1), a dense SwiGLU elsewhere."""
    n = read_num_layers(c)
    attn_period, attn_offset = c.int("attn_layer_period", 8), c.int("attn_layer_offset", 4, minimum=0)
    exp_period, exp_offset = c.int("expert_layer_period", 2), c.int("expert_layer_offset", 1, minimum=0)
    mamba = _mamba(c, "mamba_").model_copy(update={"inner_norms": True})
    attn = attention_mixer(c, "full_attention", **gqa_kwargs(c))
    experts = c.int("num_experts", 16)
    layers = []
    for i in range(n):
        mixer = attn if i % attn_period == attn_offset else mamba
        if experts > 1 and i % exp_period == exp_offset:
            mlp = MoE(num_experts=experts, top_k=c.int("num_experts_per_tok", 2),
                      expert_intermediate=c.int("intermediate_size"))
        else:
            mlp = DenseMLP(intermediate=c.int("intermediate_size"))
        layers.append(DecoderLayer(mixer=mixer, mlp=mlp))
    return layers, []


def mllama_text_layers(c: Fields) -> Layers:
    """Mllama's text model: Llama layers, with cross-attention layers at ``cross_attention_layers`` whose keys and
    values come from the image (``_image_tokens`` of them, set from the vision config by the reader)."""
    n = read_num_layers(c)
    cross = {i for i in (c.list("cross_attention_layers") if c.has("cross_attention_layers") else [])
             if isinstance(i, int)}
    kinds = attention_kinds(c, n)
    heads = c.int("num_attention_heads")
    xattn = CrossAttention(num_heads=heads, num_kv_heads=c.int("num_key_value_heads", heads),
                           head_dim=c.int("hidden_size") // heads, encoder_tokens=c.int("_image_tokens", 4 * 1601),
                           cache_dtype_bytes=_dtype_bytes(c))
    gqa = gqa_kwargs(c)
    return [DecoderLayer(mixer=xattn if i in cross else attention_mixer(c, kinds[i], **gqa), mlp=mlp_for_layer(c, i, n))
            for i in range(n)], []
