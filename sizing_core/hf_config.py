"""Parse a Hugging Face ``config.json`` into an :class:`Architecture`.

One builder per architecture family. Layer kinds are resolved from whichever encoding the config uses
(``layer_types``, ``full_attention_interval``, ``linear_attn_config``, ``hybrid_override_pattern``,
``hybrid_layer_pattern``, ``block_configs``, ``compress_ratios``, ``sliding_window`` rules, ...). A missing field
raises :class:`ConfigError` naming the model and the field; nothing falls back to a silent default except where
the model's own code documents the default (noted where used).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .architecture import Architecture, DeclaredParameters, QuantScheme
from .errors import ConfigError
from .layers import (
    MLP,
    ChunkedLocalAttention,
    CompressedSparseAttention,
    DecoderLayer,
    DenseMLP,
    FullAttention,
    GatedDeltaNet,
    KimiDeltaAttention,
    LinearAttention,
    LinearReplacement,
    Mamba2,
    Mixer,
    MLAAttention,
    MoE,
    ParallelHybrid,
    ShortConv,
    SlidingWindowAttention,
)
from .quantization import native_scheme
from .record import InvalidField
from .units import DTYPE_BYTES


class Fields:
    """Typed access to one config dict; every failure names the model and the dotted field."""

    def __init__(self, model: str, data: dict[str, Any], path: str = ""):
        self.model, self.data, self.path = model, data, path

    def _name(self, key: str) -> str:
        return f"{self.path}{key}"

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def raw(self, key: str, default: Any = None) -> Any:
        value = self.data.get(key)
        return default if value is None else value

    def int(self, key: str, default: int | None = None, *, minimum: int = 1) -> int:
        value = self.data.get(key)
        if isinstance(value, list) and value and all(v == value[0] for v in value):
            value = value[0]  # a per-layer list with one value for every layer (Hunyuan's moe_topk, ...)
        if value is None:
            if default is None:
                raise ConfigError(self.model, self._name(key), "is missing")
            return default
        if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
            raise ConfigError(self.model, self._name(key), f"must be an integer, got {value!r}")
        if value < minimum:
            raise ConfigError(self.model, self._name(key), f"must be >= {minimum}, got {value!r}")
        return int(value)

    def first_int(self, *keys: str, default: int | None = None, minimum: int = 1) -> int:
        for key in keys:
            if self.has(key):
                return self.int(key, minimum=minimum)
        if default is None:
            raise ConfigError(self.model, " / ".join(self._name(k) for k in keys), "is missing")
        return default

    def bool(self, key: str, default: bool = False) -> bool:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ConfigError(self.model, self._name(key), f"must be true or false, got {value!r}")
        return value

    def list(self, key: str, length: int | None = None) -> list[Any]:
        value = self.data.get(key)
        if not isinstance(value, list):
            raise ConfigError(self.model, self._name(key), "is missing or not a list")
        if length is not None and len(value) < length:
            raise ConfigError(self.model, self._name(key), f"has {len(value)} entries, expected {length}")
        return value

    def sub(self, key: str) -> Fields:
        value = self.data.get(key)
        if not isinstance(value, dict):
            raise ConfigError(self.model, self._name(key), "is missing or not an object")
        return Fields(self.model, value, f"{self._name(key)}.")


# ------------------------------------------------------------------------------------------ shared rules
def _head_dim(c: Fields) -> int:
    if c.has("head_dim"):
        return c.int("head_dim")
    return c.int("hidden_size") // c.int("num_attention_heads")


def _gqa(c: Fields, **extra: Any) -> dict[str, Any]:
    heads = c.int("num_attention_heads")
    return dict(num_heads=heads, num_kv_heads=c.int("num_key_value_heads", heads), head_dim=_head_dim(c), **extra)


_KIND_ALIASES = {"attention": "full_attention", "global": "full_attention", "full": "full_attention",
                 "global_attention": "full_attention", "sliding": "sliding_attention", "local": "sliding_attention",
                 "local_attention": "sliding_attention", "sliding_window": "sliding_attention",
                 "chunked_attention": "chunked_attention", "linear": "linear_attention"}


def _attention_kinds(c: Fields, n: int) -> list[str]:
    """``full_attention`` / ``sliding_attention`` / ``linear_attention`` per layer from any known encoding."""
    if c.has("layer_types"):
        kinds = [str(k) for k in c.list("layer_types", n)[:n]]
        return [_KIND_ALIASES.get(k, k) for k in kinds]
    if c.has("attn_type_list"):  # MiniMax-Text-01 / M1: 0 = lightning linear attention, 1 = softmax attention
        return ["full_attention" if int(k) else "linear_attention" for k in c.list("attn_type_list", n)[:n]]
    if c.has("full_attention_interval"):
        every = c.int("full_attention_interval")
        return ["full_attention" if (i + 1) % every == 0 else "linear_attention" for i in range(n)]
    if c.has("sliding_window_pattern") and c.has("sliding_window"):
        pattern = c.raw("sliding_window_pattern")
        if isinstance(pattern, str):  # EXAONE 4 style "LLLG": L = local (sliding), G = global, repeated
            if not pattern or set(pattern.upper()) - {"L", "G"}:
                raise ConfigError(c.model, "sliding_window_pattern", f"unknown pattern {pattern!r}")
            return ["sliding_attention" if pattern[i % len(pattern)].upper() == "L" else "full_attention"
                    for i in range(n)]
        every = c.int("sliding_window_pattern")
        return ["full_attention" if (i + 1) % every == 0 else "sliding_attention" for i in range(n)]
    if c.has("use_sliding_window"):  # Qwen2/Qwen3: SWA only when switched on, on layers >= max_window_layers
        if c.bool("use_sliding_window") and c.has("sliding_window"):
            first = c.int("max_window_layers", 0, minimum=0)
            return ["sliding_attention" if i >= first else "full_attention" for i in range(n)]
        return ["full_attention"] * n
    if c.has("sliding_window"):  # Mistral v0.1 style: every layer slides
        return ["sliding_attention"] * n
    return ["full_attention"] * n


def _window(c: Fields) -> int:
    return c.first_int("sliding_window", "sliding_window_size")


def window_covers_context(c: Fields) -> bool:
    """A window at least as long as the maximum context never slides: the layer is full attention (Phi-3.5-mini
    and Phi-4-mini set ``sliding_window`` 262144 with a 131072-token context)."""
    max_ctx = c.raw("max_position_embeddings")
    return isinstance(max_ctx, int) and max_ctx > 0 and _window(c) >= max_ctx


def _attention(c: Fields, kind: str, **gqa: Any) -> Mixer:
    if kind == "full_attention":
        return FullAttention(**gqa)
    if kind == "sliding_attention":
        if window_covers_context(c):
            return FullAttention(**gqa)
        return SlidingWindowAttention(window=_window(c), **gqa)
    if kind == "chunked_attention":
        return ChunkedLocalAttention(chunk=c.int("attention_chunk_size"), **gqa)
    if kind == "linear_attention":  # plain linear attention (MiniMax lightning): a fixed state per request
        dtype = str(c.raw("dtype", c.raw("torch_dtype", "bfloat16"))).lower()
        return LinearAttention(num_heads=gqa["num_heads"], head_dim=gqa["head_dim"],
                               state_dtype_bytes=DTYPE_BYTES.get(dtype, 2))
    raise ConfigError(c.model, "layer_types", f"unknown attention kind {kind!r}")


_EXPERTS = ("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts")
_TOP_K = ("num_experts_per_tok", "num_experts_per_token", "experts_per_token", "top_k_experts", "moe_topk", "moe_k",
          "moe_top_k", "num_activated_experts")
_EXPERT_WIDTH = ("moe_intermediate_size", "expert_intermediate_size", "moe_ffn_hidden_size", "intermediate_size")
_SHARED_COUNT = ("n_shared_experts", "num_shared_experts", "moe_num_shared_experts", "num_shared_expert")
_FIRST_DENSE = ("first_k_dense_replace", "moe_layer_start_index", "first_dense_layers")
#: The expert width of latent MoE (Nemotron 3 Super, Kimi K3): routed experts run in a smaller space.
_LATENT = ("moe_latent_size", "routed_expert_hidden_size", "moe_latent_hidden_size")


def _top_k(c: Fields) -> int:
    return c.first_int(*_TOP_K)


def _num_experts(c: Fields) -> int:
    return c.first_int(*_EXPERTS, default=0, minimum=0)


def _is_moe_layer(c: Fields, i: int, n: int) -> bool:
    """Which layers carry experts, from DeepSeek, Qwen, GLM, ERNIE and Llama-4 style switches."""
    if _num_experts(c) == 0:
        return False
    if c.has("mlp_layer_types"):
        return c.list("mlp_layer_types", n)[i] == "sparse"
    if i < c.first_int(*_FIRST_DENSE, default=0, minimum=0):
        return False
    if c.has("moe_layer_end_index") and i > c.int("moe_layer_end_index", minimum=0):
        return False
    if i in (c.raw("mlp_only_layers") or []):
        return False
    freq = c.raw("moe_layer_freq")
    if isinstance(freq, list):
        return bool(c.list("moe_layer_freq", n)[i])
    step = c.first_int("moe_layer_freq", "decoder_sparse_step", "interleave_moe_layer_step", "moe_layer_interval",
                       default=1)
    if c.has("interleave_moe_layer_step"):
        return (i + 1) % step == 0
    return i % step == 0


def _shared_width(c: Fields) -> int:
    for key in ("shared_expert_intermediate_size", "shared_intermediate_size", "moe_shared_expert_intermediate_size"):
        if c.has(key):
            width = c.int(key, minimum=0)
            return width * c.first_int(*_SHARED_COUNT, default=1, minimum=0) if key.startswith("moe_shared") \
                else width
    shared = c.first_int(*_SHARED_COUNT, default=0, minimum=0)
    per = c.first_int("share_expert_dim", *_EXPERT_WIDTH, default=0, minimum=0)
    return shared * per


def _mlp(c: Fields, i: int, n: int, *, gated: bool = True, bias: bool = False, **moe_extra: Any) -> MLP:
    if _is_moe_layer(c, i, n):
        return MoE(num_experts=_num_experts(c), top_k=_top_k(c), expert_intermediate=c.first_int(*_EXPERT_WIDTH),
                   shared_intermediate=_shared_width(c), latent_size=c.first_int(*_LATENT, default=0, minimum=0),
                   gated=gated, **moe_extra)
    return DenseMLP(intermediate=c.first_int("intermediate_size", "ffn_hidden_size"), gated=gated, bias=bias)


def _mtp_count(c: Fields) -> int:
    return c.first_int("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules", default=0, minimum=0)


def _num_layers(c: Fields) -> int:
    """``num_hidden_layers``, or the length of a per-layer list when the config only gives that."""
    if c.has("num_hidden_layers"):
        return c.int("num_hidden_layers")
    for key in ("layer_types", "layers_block_type"):
        if isinstance(c.raw(key), list) and c.raw(key):
            return len(c.raw(key))
    return c.int("num_hidden_layers")


# ------------------------------------------------------------------------------------------ families
Layers = tuple[list[DecoderLayer], list[DecoderLayer]]  # (decoder layers, MTP layers)


def _decoder(c: Fields, *, qk_norm: bool | None = None, qk_norm_full: bool = False, attn_bias: bool | None = None,
             o_bias: bool | None = None, fused_qkv: bool = False, gated: bool = True, mlp_bias: bool | None = None,
             router_bias: bool | None = None, shared_gate: bool = False, norms: int | None = None) -> Layers:
    """The standard decoder: GQA attention (full, sliding or windowed per layer) and a dense or MoE MLP.

    Every switch left at ``None`` is read from the config's own field (``use_qk_norm``/``qk_layernorm``,
    ``attention_bias``/``qkv_bias``/``use_bias``/``bias``, ``mlp_bias``, ``use_moe_router_bias``/
    ``use_routing_bias``); the family table fixes the ones a family's code hard-wires.
    """
    n = _num_layers(c)
    if qk_norm is None:
        qk_norm = c.bool("use_qk_norm") or c.bool("qk_layernorm")
    if attn_bias is None:
        attn_bias = any(c.bool(k) for k in ("attention_bias", "qkv_bias", "use_bias", "bias", "use_qkv_bias"))
    if o_bias is None:
        o_bias = c.bool("use_bias") or c.bool("attention_out_bias") or (c.bool("bias") and not c.has("attention_bias"))
    if mlp_bias is None:
        mlp_bias = c.bool("mlp_bias") or c.bool("use_bias")
    if router_bias is None:
        router_bias = c.bool("use_moe_router_bias") or c.bool("use_routing_bias")
    gqa = _gqa(c, qk_norm=qk_norm, qk_norm_full=qk_norm_full, bias=attn_bias, o_bias=o_bias, fused_qkv=fused_qkv)
    kinds = _attention_kinds(c, n)
    layers = [DecoderLayer(mixer=_attention(c, kinds[i], **gqa),
                           mlp=_mlp(c, i, n, gated=gated, bias=mlp_bias, router_bias=router_bias,
                                    **({"shared_gate": True} if shared_gate else {})),
                           norms=norms)
              for i in range(n)]
    return layers, [layers[-1]] * _mtp_count(c)


def standard(**switches: Any) -> Callable[[Fields], Layers]:
    """A family that is the standard decoder with some switches fixed by its modelling code."""
    return lambda c: _decoder(c, **switches)


def _generic(c: Fields) -> Layers:
    return _decoder(c)


def _structural(c: Fields) -> tuple[Callable[[Fields], Layers], str]:
    """For an unknown model_type: the builder its fields call for. A new name on a known structure (an MLA
    model, a Nemotron-H style hybrid, ...) is read by that structure's fields, not as a plain decoder."""
    if isinstance(c.raw("linear_attn_config"), dict):
        return _kimi_linear, "Kimi Delta Attention + MLA layers (linear_attn_config present)"
    if c.has("compress_ratios"):
        return _deepseek_v4, "compressed sparse attention (compress_ratios present)"
    if c.has("kv_lora_rank"):
        return _deepseek, "MLA attention (kv_lora_rank present): one latent per token"
    if c.has("hybrid_layer_pattern") and c.has("swa_num_key_value_heads"):
        return _mimo_v2, "hybrid_layer_pattern with separate sliding-window shapes"
    if c.has("global_head_dim") or c.has("num_global_key_value_heads"):
        return _gemma4, "sliding and global layers with their own KV shapes (global_head_dim present)"
    if c.has("attention_chunk_size") and c.has("intermediate_size_mlp"):
        return _llama4, "chunked local attention with interleaved MoE (attention_chunk_size present)"
    if c.has("linear_num_value_heads"):
        return _qwen_hybrid, "Gated DeltaNet hybrid (linear_num_value_heads present)"
    if c.has("hybrid_override_pattern") or (c.has("layers_block_type") and c.has("mamba_num_heads")):
        return _nemotron_h, "Mamba2 hybrid blocks (hybrid_override_pattern / layers_block_type present)"
    if c.has("block_configs"):
        return _decilm, "per-layer block_configs"
    if c.has("mamba_d_ssm") and c.has("num_attention_heads"):
        return _falcon_h1, "parallel attention + Mamba2 in every layer (mamba_d_ssm present)"
    return _generic, "standard decoder"


def _gpt_oss(c: Fields) -> Layers:
    n = c.int("num_hidden_layers")
    gqa = _gqa(c, bias=True, o_bias=True, sinks=True)
    kinds = _attention_kinds(c, n)
    moe = MoE(num_experts=_num_experts(c), top_k=_top_k(c), expert_intermediate=c.int("intermediate_size"),
              expert_bias=True, router_bias=True)
    return [DecoderLayer(mixer=_attention(c, kinds[i], **gqa), mlp=moe) for i in range(n)], []


def _mla(c: Fields) -> MLAAttention:
    q_lora = c.raw("q_lora_rank")
    return MLAAttention(
        num_heads=c.int("num_attention_heads"),
        q_lora_rank=c.int("q_lora_rank") if q_lora is not None else None,
        kv_lora_rank=c.int("kv_lora_rank"),
        qk_nope_head_dim=c.int("qk_nope_head_dim"),
        qk_rope_head_dim=c.int("qk_rope_head_dim"),
        v_head_dim=c.int("v_head_dim"),
        indexer_heads=c.int("index_n_heads", 0, minimum=0),
        indexer_head_dim=c.int("index_head_dim", 0, minimum=0),
    )


def _deepseek(c: Fields) -> Layers:
    """DeepSeek-V2/V3/R1, Kimi-K2, GLM-4.7-Flash, GLM-5 (MLA, shared experts, first_k_dense_replace)."""
    n = c.int("num_hidden_layers")
    mla = _mla(c)
    router_bias = c.raw("topk_method") == "noaux_tc"
    layers = [DecoderLayer(mixer=mla, mlp=_mlp(c, i, n, router_bias=router_bias)) for i in range(n)]
    return layers, [layers[-1]] * _mtp_count(c)


def _deepseek_v4(c: Fields) -> Layers:
    n = c.int("num_hidden_layers")
    ratios = c.list("compress_ratios", n)
    common = dict(num_heads=c.int("num_attention_heads"), head_dim=c.int("head_dim"), q_lora_rank=c.int("q_lora_rank"),
                  o_lora_rank=c.int("o_lora_rank"), o_groups=c.int("o_groups"), window=c.int("sliding_window"),
                  indexer_heads=c.int("index_n_heads", 0, minimum=0),
                  indexer_head_dim=c.int("index_head_dim", 0, minimum=0))
    moe = MoE(num_experts=_num_experts(c), top_k=_top_k(c), expert_intermediate=c.int("moe_intermediate_size"),
              shared_intermediate=_shared_width(c), router_bias=True)

    def layer(i: int) -> DecoderLayer:
        ratio = ratios[i] if i < len(ratios) else 0
        return DecoderLayer(mixer=CompressedSparseAttention(compress_ratio=int(ratio), **common), mlp=moe)

    return [layer(i) for i in range(n)], [layer(n + j) for j in range(_mtp_count(c))]


def _qwen_hybrid(c: Fields) -> Layers:
    """Qwen3-Next and Qwen3.5: Gated DeltaNet layers with gated full attention every few layers."""
    n = c.int("num_hidden_layers")
    kinds = _attention_kinds(c, n)
    dtype = str(c.raw("dtype", c.raw("torch_dtype", "bfloat16")))
    gdn = GatedDeltaNet(
        num_k_heads=c.int("linear_num_key_heads"), num_v_heads=c.int("linear_num_value_heads"),
        k_head_dim=c.int("linear_key_head_dim"), v_head_dim=c.int("linear_value_head_dim"),
        conv_kernel=c.int("linear_conv_kernel_dim"), conv_dtype_bytes=DTYPE_BYTES[dtype],
        ssm_dtype_bytes=DTYPE_BYTES[str(c.raw("mamba_ssm_dtype", dtype))],
    )
    attn = FullAttention(**_gqa(c, q_gate=c.bool("attn_output_gate", True), qk_norm=True))

    def mixer(kind: str) -> Mixer:
        if kind == "linear_attention":
            return gdn
        if kind == "full_attention":
            return attn
        raise ConfigError(c.model, "layer_types", f"unknown layer kind {kind!r}")

    layers = [DecoderLayer(mixer=mixer(kinds[i]), mlp=_mlp(c, i, n, shared_gate=True)) for i in range(n)]
    mtp = [DecoderLayer(mixer=attn, mlp=layers[-1].mlp)] * _mtp_count(c)
    return layers, mtp


def _kimi_linear(c: Fields) -> Layers:
    n = c.int("num_hidden_layers")
    lin = c.sub("linear_attn_config")
    full = {int(x) - 1 for x in lin.list("full_attn_layers")}  # 1-based in the config
    kda_layers = {int(x) - 1 for x in lin.list("kda_layers")}
    if (bad := (full | kda_layers) - set(range(n))) or len(full | kda_layers) != n:
        raise ConfigError(c.model, "linear_attn_config", f"layer lists do not cover 1..{n} exactly ({sorted(bad)})")
    kda = KimiDeltaAttention(num_heads=lin.int("num_heads"), head_dim=lin.int("head_dim"),
                             conv_kernel=lin.int("short_conv_kernel_size"))
    mla = _mla(c)
    # Kimi Linear's MoE gate carries an e_score_correction_bias per expert (sigmoid routing, as DeepSeek-V3).
    return [DecoderLayer(mixer=mla if i in full else kda, mlp=_mlp(c, i, n, router_bias=True)) for i in range(n)], []


_BLOCK_NAMES = {"mamba": "M", "attention": "*", "mlp": "-", "moe": "E", "M": "M", "*": "*", "-": "-", "E": "E"}


def _block_pattern(c: Fields, key: str) -> str:
    """A ``layers_block_type`` list (``mamba``/``attention``/``mlp``/``moe``) as hybrid_override_pattern characters."""
    kinds = [str(k) for k in c.list(key)]
    if bad := sorted(set(kinds) - set(_BLOCK_NAMES)):
        raise ConfigError(c.model, key, f"unknown block kinds {bad}")
    return "".join(_BLOCK_NAMES[k] for k in kinds)


def _nemotron_h(c: Fields) -> Layers:
    """Nemotron-H / Nemotron 3: one block per pattern character, M=Mamba2, *=attention, -=MLP, E=MoE."""
    if c.has("layers_block_type") and not c.has("hybrid_override_pattern"):
        # Newer Nemotron-H configs list block kinds by name and may leave out num_hidden_layers.
        pattern = _block_pattern(c, "layers_block_type")
    else:
        pattern = str(c.raw("hybrid_override_pattern", ""))
    n = len(pattern) if not c.has("num_hidden_layers") else c.int("num_hidden_layers")
    if len(pattern) != n:
        raise ConfigError(c.model, "hybrid_override_pattern", f"has {len(pattern)} characters, expected {n}")
    dtype = str(c.raw("dtype", c.raw("torch_dtype", "bfloat16")))
    mamba = Mamba2(num_heads=c.int("mamba_num_heads"), head_dim=c.int("mamba_head_dim"), n_groups=c.int("n_groups"),
                   state_size=c.int("ssm_state_size"), conv_kernel=c.int("conv_kernel"),
                   conv_bias=c.bool("use_conv_bias", True), conv_dtype_bytes=DTYPE_BYTES[dtype],
                   ssm_dtype_bytes=DTYPE_BYTES[str(c.raw("mamba_ssm_cache_dtype", dtype))])
    heads = c.int("num_attention_heads")
    attn = FullAttention(num_heads=heads, num_kv_heads=c.int("num_key_value_heads"),
                         head_dim=c.first_int("head_dim", "attention_head_dim", default=c.int("hidden_size") // heads))

    def block(ch: str, field: str) -> DecoderLayer:
        if ch == "M":
            return DecoderLayer(mixer=mamba)
        if ch == "*":
            return DecoderLayer(mixer=attn)
        if ch == "-":
            return DecoderLayer(mlp=DenseMLP(intermediate=c.int("intermediate_size"), gated=False))
        if ch == "E":
            shared = c.int("moe_shared_expert_intermediate_size", 0, minimum=0) * c.int("n_shared_experts", 1)
            return DecoderLayer(mlp=MoE(num_experts=c.first_int(*_EXPERTS), top_k=_top_k(c),
                                        expert_intermediate=c.int("moe_intermediate_size"), shared_intermediate=shared,
                                        gated=False, router_bias=True, latent_size=c.first_int(*_LATENT, default=0, minimum=0)))
        raise ConfigError(c.model, field, f"unknown block character {ch!r}")

    layers = [block(ch, "hybrid_override_pattern") for ch in pattern]
    mtp_pattern = (_block_pattern(c, "mtp_layers_block_type") if c.has("mtp_layers_block_type")
                   else str(c.raw("mtp_hybrid_override_pattern", "")))
    mtp = [block(ch, "mtp_hybrid_override_pattern") for ch in mtp_pattern]
    return layers, mtp * _mtp_count(c)


def _model_dtype(c: Fields) -> float:
    dtype = str(c.raw("dtype", c.raw("torch_dtype", "bfloat16"))).lower()
    return DTYPE_BYTES.get(dtype, 2)


def _lfm2(c: Fields) -> Layers:
    """LFM2 (Liquid): short-convolution layers and GQA attention layers (``layer_types`` or ``full_attn_idxs``),
    each followed by a SwiGLU MLP whose width Lfm2Config adjusts: 2/3 of ``block_ff_dim``, times
    ``block_ffn_dim_multiplier``, rounded up to ``block_multiple_of``; MoE layers (``lfm2_moe``) after
    ``num_dense_layers``."""
    n = _num_layers(c)
    if c.has("layer_types"):
        kinds = [str(k) for k in c.list("layer_types", n)[:n]]
    else:
        full = {int(i) for i in c.list("full_attn_idxs")}
        kinds = ["full_attention" if i in full else "conv" for i in range(n)]
    ff = c.first_int("block_ff_dim", "intermediate_size")
    if c.bool("block_auto_adjust_ff_dim", True):
        ff = int(2 * ff / 3)
        mult = c.raw("block_ffn_dim_multiplier")
        if isinstance(mult, int | float) and mult:
            ff = int(mult * ff)
        multiple = c.int("block_multiple_of", 256)
        ff = multiple * ((ff + multiple - 1) // multiple)
    conv = ShortConv(hidden=c.int("hidden_size"), conv_kernel=c.int("conv_L_cache", 3), bias=c.bool("conv_bias"),
                     conv_dtype_bytes=_model_dtype(c))
    attn = FullAttention(**_gqa(c, qk_norm=True))
    dense_first = c.int("num_dense_layers", 0, minimum=0)
    layers = []
    for i, kind in enumerate(kinds):
        if kind not in ("conv", "full_attention", "attention"):
            raise ConfigError(c.model, "layer_types", f"unknown LFM2 layer kind {kind!r}")
        if _num_experts(c) and i >= dense_first:
            mlp: MLP = MoE(num_experts=_num_experts(c), top_k=_top_k(c), expert_intermediate=c.int("moe_intermediate_size"),
                           router_bias=c.bool("use_expert_bias"))
        else:
            mlp = DenseMLP(intermediate=ff)
        layers.append(DecoderLayer(mixer=conv if kind == "conv" else attn, mlp=mlp))
    return layers, []


def _granite_hybrid(c: Fields) -> Layers:
    """Granite 4.0 (granitemoehybrid): Mamba2 and attention layers from ``layer_types``; every layer has a
    shared SwiGLU MLP of ``shared_intermediate_size`` and, when ``num_local_experts`` > 0, routed experts of
    ``intermediate_size`` beside it."""
    n = _num_layers(c)
    kinds = [str(k) for k in c.list("layer_types", n)[:n]] if c.has("layer_types") else ["attention"] * n
    heads = c.int("mamba_n_heads", 1)
    dtype = _model_dtype(c)
    mamba = Mamba2(num_heads=heads, head_dim=c.first_int("mamba_d_head", default=c.int("mamba_expand", 2)
                                                         * c.int("hidden_size") // heads),
                   n_groups=c.int("mamba_n_groups", 1), state_size=c.int("mamba_d_state", 128),
                   conv_kernel=c.int("mamba_d_conv", 4), conv_bias=c.bool("mamba_conv_bias", True),
                   conv_dtype_bytes=dtype, ssm_dtype_bytes=dtype) if "mamba" in kinds else None
    attn = FullAttention(**_gqa(c, bias=c.bool("attention_bias")))
    shared = c.int("shared_intermediate_size", 0, minimum=0)
    experts = c.int("num_local_experts", 0, minimum=0)
    if experts:
        mlp: MLP = MoE(num_experts=experts, top_k=_top_k(c), expert_intermediate=c.int("intermediate_size"),
                       shared_intermediate=shared)
    else:
        mlp = DenseMLP(intermediate=shared or c.int("intermediate_size"))
    layers = []
    for kind in kinds:
        if kind not in ("mamba", "attention"):
            raise ConfigError(c.model, "layer_types", f"unknown Granite hybrid layer kind {kind!r}")
        layers.append(DecoderLayer(mixer=mamba if kind == "mamba" else attn, mlp=mlp))
    return layers, []


def _falcon_h1(c: Fields) -> Layers:
    """Falcon-H1: every layer runs GQA attention and a Mamba2 mixer in parallel (``mamba_d_ssm`` inner width,
    ``mamba_n_heads`` x ``mamba_d_head``), then a SwiGLU MLP."""
    n = _num_layers(c)
    heads = c.int("mamba_n_heads")
    dtype = _model_dtype(c)
    ssm = Mamba2(num_heads=heads, head_dim=c.first_int("mamba_d_head", default=c.int("mamba_d_ssm") // heads),
                 n_groups=c.int("mamba_n_groups", 1), state_size=c.int("mamba_d_state"),
                 conv_kernel=c.int("mamba_d_conv", 4), conv_bias=c.bool("mamba_conv_bias", True),
                 conv_dtype_bytes=dtype, ssm_dtype_bytes=dtype)
    mixer = ParallelHybrid(attention=FullAttention(**_gqa(c, bias=c.bool("attention_bias"))), ssm=ssm)
    layer = DecoderLayer(mixer=mixer, mlp=DenseMLP(intermediate=c.int("intermediate_size"),
                                                   bias=c.bool("projectors_bias")))
    return [layer] * n, []


def _gemma3n(c: Fields) -> Layers:
    """Gemma 3n: 4 sliding : 1 global layers whose last ``num_kv_shared_layers`` reuse earlier layers' KV (no
    cache of their own); per-head q/k norms; per-layer MLP widths. Its per-layer embeddings, AltUp and LAuReL
    weights are added as extra parameters (``gemma3n_extra_parameters``)."""
    n = _num_layers(c)
    kinds = _attention_kinds(c, n)
    shared_from = n - c.int("num_kv_shared_layers", 0, minimum=0)
    widths = c.raw("intermediate_size")
    layers = []
    for i in range(n):
        gqa = _gqa(c, qk_norm=True, kv_shared=i >= shared_from)
        width = widths[i] if isinstance(widths, list) else c.int("intermediate_size")
        layers.append(DecoderLayer(mixer=_attention(c, kinds[i], **gqa), mlp=DenseMLP(intermediate=int(width)),
                                   norms=4))
    return layers, []


def gemma3n_extra_parameters(c: Fields, n: int) -> int:
    """Per-layer embeddings (vocab_size_per_layer_input x layers x hidden_size_per_layer_input) and their
    projection, and per layer: AltUp (router, coefficients), LAuReL (low-rank h -> r -> h), the per-layer input gate
    and projection, 3 extra norms; AltUp's (n-1) in and out projections."""
    h, hp, r = c.int("hidden_size"), c.int("hidden_size_per_layer_input"), c.int("laurel_rank", 64)
    k = c.int("altup_num_inputs", 4)
    model = (c.int("vocab_size_per_layer_input") * n * hp + h * n * hp + hp + 2 * (k - 1) * h * h)
    per_layer = (h + k * k + k * k * k + h * k + h) + (2 * h * r + h) + (2 * h * hp + h)
    return model + n * per_layer


def _decilm(c: Fields) -> Layers:
    """Nemotron-NAS (DeciLM): per-layer ``block_configs`` vary KV groups and FFN width, or drop a sub-block."""
    n = c.int("num_hidden_layers")
    blocks = c.list("block_configs", n)
    h, heads = c.int("hidden_size"), c.int("num_attention_heads")
    layers = []
    for i, raw in enumerate(blocks[:n]):
        b = Fields(c.model, raw, f"block_configs[{i}].")
        att, ffn = b.sub("attention"), b.sub("ffn")
        mixer: Mixer | None = None
        if att.bool("replace_with_linear"):
            mixer = LinearReplacement()
        elif not att.bool("no_op"):
            mixer = FullAttention(num_heads=heads, num_kv_heads=heads // att.int("n_heads_in_group"),
                                  head_dim=h // heads)
        mlp: MLP | None = None
        if ffn.bool("replace_with_linear"):
            mlp = LinearReplacement()
        elif not ffn.bool("no_op"):
            mult = ffn.raw("ffn_mult")
            if not isinstance(mult, int | float) or mult <= 0:
                raise ConfigError(c.model, f"block_configs[{i}].ffn.ffn_mult", f"must be a positive number, got {mult!r}")
            width = int(2 * mult * h / 3)  # DeciLM's _ffn_mult_to_intermediate_size, rounded up to 256
            mlp = DenseMLP(intermediate=math.ceil(width / 256) * 256)
        layers.append(DecoderLayer(mixer=mixer, mlp=mlp))
    return layers, []


def _llama4(c: Fields) -> Layers:
    """Llama 4: chunked local attention on three layers of four (the fourth is global, NoPE); MoE layers
    interleaved every ``interleave_moe_layer_step`` with one shared expert; dense layers use
    ``intermediate_size_mlp``."""
    n = c.int("num_hidden_layers")
    gqa = _gqa(c, qk_norm=c.bool("use_qk_norm"))
    chunk = c.int("attention_chunk_size")
    rope = c.raw("no_rope_layers") or [int((i + 1) % 4 != 0) for i in range(n)]  # HF Llama4TextConfig default
    layers = []
    for i in range(n):
        mixer = ChunkedLocalAttention(chunk=chunk, **gqa) if rope[i] else FullAttention(**gqa)
        if _is_moe_layer(c, i, n):
            inter = c.int("intermediate_size")
            mlp: MLP = MoE(num_experts=_num_experts(c), top_k=_top_k(c), expert_intermediate=inter,
                           shared_intermediate=inter)
        else:
            mlp = DenseMLP(intermediate=c.int("intermediate_size_mlp"))
        layers.append(DecoderLayer(mixer=mixer, mlp=mlp))
    return layers, []


def _gemma4(c: Fields) -> Layers:
    """Gemma 4: sliding layers (``head_dim``, ``num_key_value_heads``) and global layers (``global_head_dim``,
    ``num_global_key_value_heads``, keys doubling as values when ``attention_k_eq_v``)."""
    n = c.int("num_hidden_layers")
    heads = c.int("num_attention_heads")
    kinds = _attention_kinds(c, n)
    local = SlidingWindowAttention(num_heads=heads, num_kv_heads=c.int("num_key_value_heads"),
                                   head_dim=c.int("head_dim"), qk_norm=True, window=c.int("sliding_window"))
    glob = FullAttention(num_heads=heads, num_kv_heads=c.int("num_global_key_value_heads"),
                         head_dim=c.int("global_head_dim"), qk_norm=True, k_eq_v=c.bool("attention_k_eq_v"))
    if c.bool("enable_moe_block"):
        mlp: MLP = MoE(num_experts=c.int("num_experts"), top_k=c.int("top_k_experts"),
                       expert_intermediate=c.int("moe_intermediate_size"),
                       dense_intermediate=c.int("intermediate_size"))
    else:
        mlp = DenseMLP(intermediate=c.int("intermediate_size"))
    return [DecoderLayer(mixer=glob if kinds[i] == "full_attention" else local, mlp=mlp) for i in range(n)], []


def _mimo_v2(c: Fields) -> Layers:
    """MiMo-V2-Flash: ``hybrid_layer_pattern`` 0 = global attention, 1 = sliding window with its own shapes."""
    n = c.int("num_hidden_layers")
    pattern = c.list("hybrid_layer_pattern", n)
    glob = FullAttention(**_gqa(c, v_head_dim=c.int("v_head_dim")))
    local = SlidingWindowAttention(
        num_heads=c.int("swa_num_attention_heads"), num_kv_heads=c.int("swa_num_key_value_heads"),
        head_dim=c.int("swa_head_dim"), v_head_dim=c.int("swa_v_head_dim"),
        sinks=c.bool("add_swa_attention_sink_bias"), window=c.first_int("sliding_window_size", "sliding_window"))
    layers = [DecoderLayer(mixer=local if pattern[i] else glob, mlp=_mlp(c, i, n, router_bias=True))
              for i in range(n)]
    return layers, [layers[-1]] * _mtp_count(c)


@dataclass(frozen=True)
class Family:
    """One row of the family table: how to build the layers, what differs from the generic decoder, and the
    defaults of the family's config class that its ``config.json`` files may leave out."""

    build: Callable[[Fields], Layers]
    rule: str
    defaults: dict[str, Any] = field(default_factory=dict)


_GENERIC_RULE = "standard decoder (the generic rule)"
_TIED = {"tie_word_embeddings": True}

#: Every model_type we know, in one table. ``docs/sizing.md`` lists the same rows.
FAMILIES: dict[str, Family] = {
    # --- the standard decoder, switches read from the config
    **{t: Family(_generic, _GENERIC_RULE) for t in (
        "llama", "mistral", "ministral", "ministral3", "mixtral", "mimo", "step3p7",
        "granite", "granitemoe", "granitemoeshared", "smollm3", "seed_oss", "hunyuan_v1_dense", "glm", "olmo",
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
    "gemma": Family(standard(), "GeGLU MLP; tied embeddings", _TIED),
    "gemma2": Family(standard(norms=4),
                     "alternating sliding (even layers) and global attention; 4 norms per layer; tied embeddings",
                     {**_TIED, "sliding_window_pattern": 2, "head_dim": 256, "sliding_window": 4096}),
    "gemma3_text": Family(standard(qk_norm=True, norms=4),
                          "5 sliding : 1 global (sliding_window_pattern 6 or layer_types); per-head q/k norm; "
                          "4 norms per layer; tied embeddings; Gemma3TextConfig defaults for omitted fields",
                          {**_TIED, "sliding_window_pattern": 6, "head_dim": 256, "sliding_window": 4096,
                           "vocab_size": 262208, "max_position_embeddings": 131072, "num_key_value_heads": 4,
                           "num_attention_heads": 8}),
    "cohere": Family(standard(qk_norm_full=True, norms=1),
                     "parallel attention + MLP behind one LayerNorm; optional q/k LayerNorm over all heads; tied "
                     "embeddings", _TIED),
    "cohere2": Family(standard(norms=1), "parallel block, one LayerNorm; 3 sliding : 1 global (sliding_window_pattern "
                                         "4 or layer_types); tied embeddings", {**_TIED, "sliding_window_pattern": 4}),
    "starcoder2": Family(standard(gated=False, attn_bias=None, norms=4),
                         "two-matrix MLP (c_fc, c_proj) and biases everywhere when use_bias; LayerNorm with bias",
                         {**_TIED, "use_bias": True}),
    "internlm2": Family(standard(fused_qkv=True), "fused wqkv; biases when `bias`"),
    "internlm3": Family(_generic, _GENERIC_RULE),
    "deepseek": Family(_generic, "DeepSeek V1 MoE: multi-head attention, n_routed_experts + n_shared_experts of "
                                 "moe_intermediate_size after first_k_dense_replace dense layers"),
    "minicpm": Family(_generic, "standard decoder; embedding/residual scales change no shapes", _TIED),
    "minicpm3": Family(lambda c: _deepseek(c), "MLA attention (q_lora/kv_lora) with a dense MLP", _TIED),
    **{t: Family(standard(qk_norm=True, qk_norm_full=True, router_bias=True),
                 "experts of intermediate_size; q/k RMSNorm over all heads; router correction bias; MTP modules "
                 "counted apart") for t in ("minimax_m2", "minimax_m3")},
    **{t: Family(standard(), "attn_type_list: 0 = lightning linear attention (fixed heads x d x d state), 1 = "
                             "softmax attention; experts of intermediate_size") for t in (
        "minimax", "minimax_m1", "minimax_text_01")},
    "glm4_moe": Family(standard(attn_bias=True, o_bias=False, router_bias=True),
                       "GLM-4.5/4.6/4.7: q/k/v biases, router correction bias, first_k_dense_replace dense layers, "
                       "num_nextn_predict_layers MTP layer counted apart"),
    "ernie4_5": Family(standard(), "standard decoder (use_bias switches biases)", _TIED),
    "ernie4_5_moe": Family(standard(router_bias=True),
                           "moe_num_experts/moe_k/moe_num_shared_experts; dense before moe_layer_start_index", _TIED),
    "hunyuan_v1_moe": Family(standard(qk_norm=True), "per-head q/k norm; experts of moe_intermediate_size"),
    "bailing_moe": Family(standard(fused_qkv=True, router_bias=True), "fused query_key_value; shared experts"),
    "gpt_oss": Family(_gpt_oss, "q/k/v/o biases, attention sinks, expert biases, router bias; sliding/full layer_types"),
    **{t: Family(_deepseek, "MLA: one (kv_lora_rank + qk_rope_head_dim) latent per token, replicated on every TP "
                            "rank; DSA indexer key when index_head_dim") for t in (
        "deepseek_v2", "deepseek_v3", "deepseek_v32", "kimi_k2", "glm4_moe_lite", "glm_moe_dsa")},
    "deepseek_v4": Family(_deepseek_v4, "compressed sparse attention (compress_ratios, sliding window, indexer)"),
    **{t: Family(_qwen_hybrid, "Gated DeltaNet layers, gated full attention every full_attention_interval") for t in (
        "qwen3_next", "qwen3_5_text", "qwen3_5_moe_text")},
    "kimi_linear": Family(_kimi_linear, "Kimi Delta Attention + MLA layers from linear_attn_config (1-based)"),
    "nemotron_h": Family(_nemotron_h, "Mamba2 / attention / MLP / MoE blocks from hybrid_override_pattern or "
                                      "layers_block_type; latent MoE width moe_latent_size"),
    "nemotron-nas": Family(_decilm, "DeciLM per-layer block_configs"),
    **{t: Family(_lfm2, "short-convolution (fixed state (K-1) x hidden) and GQA layers from layer_types / "
                        "full_attn_idxs; MLP width adjusted as Lfm2Config (2/3, multiplier, multiple of 256); tied "
                        "embeddings", {"tie_word_embeddings": True}) for t in ("lfm2", "lfm2_moe")},
    "falcon_h1": Family(_falcon_h1, "attention and Mamba2 in parallel in every layer (KV per token and a fixed "
                                    "state per request), then a SwiGLU MLP"),
    "gemma3n_text": Family(_gemma3n, "4 sliding : 1 global; the last num_kv_shared_layers cache nothing (KV sharing); "
                                     "per-layer embeddings, AltUp and LAuReL counted as extra parameters (kept at 16 "
                                     "bits in every format); tied embeddings",
                           {**_TIED, "num_kv_shared_layers": 15, "laurel_rank": 64, "altup_num_inputs": 4,
                            "head_dim": 256, "sliding_window": 512}),
    "granitemoehybrid": Family(_granite_hybrid, "Granite 4.0: Mamba2 / attention layer_types, shared MLP of "
                                                "shared_intermediate_size in every layer, experts beside it",
                               {"tie_word_embeddings": True}),
    "llama4_text": Family(_llama4, "chunked local attention on 3 of 4 layers; interleaved MoE with a shared expert"),
    "gemma4_text": Family(_gemma4, "sliding and global layers with their own KV shapes; keys double as values"),
    "mimo_v2_flash": Family(_mimo_v2, "hybrid_layer_pattern: sliding layers with their own shapes"),
}


# ------------------------------------------------------------------------------------------ vision
def estimate_vision_parameters(vision: dict[str, Any], text_hidden: int) -> int:
    """ViT tower + projector from ``vision_config``: depth x (4 d^2 attention + 2 d I MLP) + patch embedding +
    a patch-merger projector into the text width. An estimate (biases/norms/position tables left out)."""
    def pick(*keys: str) -> int:
        for k in keys:
            if isinstance(vision.get(k), int):
                return vision[k]
        return 0

    depth = pick("depth", "num_hidden_layers", "vt_num_hidden_layers")
    width = pick("hidden_size", "embed_dim", "vt_hidden_size")
    inter = pick("intermediate_size", "vt_intermediate_size") or 4 * width
    if not depth or not width:
        return 0
    patch = pick("patch_size") or 14
    channels = pick("in_channels", "num_channels") or 3
    temporal = pick("temporal_patch_size") or 1
    merge = pick("spatial_merge_size") or 2
    out = pick("out_hidden_size", "text_hidden_size") or text_hidden
    tower = depth * (4 * width * width + 2 * width * inter)
    embed = channels * patch * patch * temporal * width
    projector = (width * merge * merge) ** 2 + width * merge * merge * out
    return tower + embed + projector


# ------------------------------------------------------------------------------------------ entry points
def load_json(model: str, text: str | bytes, what: str = "config.json") -> dict[str, Any]:
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(model, None, f"{what} is not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ConfigError(model, None, f"{what} must be a JSON object, got {type(data).__name__}")
    return data


#: Blocks that wrap the language model's config in multimodal and remote-code checkpoints.
TEXT_WRAPPERS = ("text_config", "llm_config", "language_config", "thinker_config")

#: Other names for the standard fields, read by the generic path (GPT-2 / Falcon / ChatGLM style configs).
_ALIASES = {
    "num_hidden_layers": ("n_layers", "num_layers", "n_layer"),
    "hidden_size": ("d_model", "n_embd", "dim"),
    "num_attention_heads": ("n_heads", "n_head", "num_heads"),
    "num_key_value_heads": ("num_kv_heads", "n_kv_heads", "multi_query_group_num", "n_head_kv"),
    "intermediate_size": ("ffn_hidden_size", "n_inner", "ffn_dim"),
    "vocab_size": ("padded_vocab_size", "n_vocab"),
}


def _text_block(top: Fields) -> Fields:
    for key in TEXT_WRAPPERS:
        if isinstance(top.data.get(key), dict) and top.data[key]:
            return top.sub(key)
    return top


def _with_defaults(text: Fields, top: Fields, defaults: dict[str, Any]) -> tuple[Fields, list[str]]:
    """The text block with the family's config-class defaults filled in where neither block sets the key."""
    missing = {k: v for k, v in defaults.items() if text.data.get(k) is None and top.data.get(k) is None}
    if not missing:
        return text, []
    return Fields(text.model, {**text.data, **missing}, text.path), sorted(missing)


def _with_aliases(text: Fields) -> tuple[Fields, list[str]]:
    found = {}
    for canonical, aliases in _ALIASES.items():
        if text.data.get(canonical) is None:
            alias = next((a for a in aliases if isinstance(text.data.get(a), int)), None)
            if alias is not None:
                found[canonical] = alias
    if not found:
        return text, []
    data = {**text.data, **{k: text.data[a] for k, a in found.items()}}
    return Fields(text.model, data, text.path), [f"{k} from {a}" for k, a in found.items()]


def _generic_note(model_type: str, text: Fields, aliases: list[str]) -> str:
    assumed = ["GQA attention (num_key_value_heads, head_dim or hidden/heads)",
               "gated 3-matrix MLP" + (" / experts" if _num_experts(text) else ""),
               "biases only where the config says so"]
    if text.data.get("tie_word_embeddings") is None:
        assumed.append("untied LM head (tie_word_embeddings absent)")
    if aliases:
        assumed.append("aliases: " + ", ".join(aliases))
    return f"unknown model_type {model_type!r} sized by the generic decoder rule: " + "; ".join(assumed)


def _native(model: str, quant_source: dict[str, Any], hf_quant: dict[str, Any] | None, dtype: str,
            expert_dtype: Any) -> QuantScheme:
    """The checkpoint's format; an unknown scheme is recorded with its reason and never stops the sizing."""
    try:
        return native_scheme(model, quant_source, hf_quant, dtype, expert_dtype)
    except (ConfigError, InvalidField) as exc:
        where = "hf_quant_config.json" if hf_quant is not None else "quantization_config"
        return QuantScheme(source=where, weight_format="unknown", unsupported=str(exc))


def parse_config(model: str, config: dict[str, Any], hf_quant: dict[str, Any] | None = None,
                 native: QuantScheme | None = None, declared: DeclaredParameters | None = None) -> Architecture:
    """Build the architecture of ``model`` from its parsed config (and optional ModelOpt sidecar).

    A ``model_type`` in :data:`FAMILIES` uses its row; any other is sized by the generic decoder rule when the
    standard fields are there (``architecture_source`` "generic", with a note of what was assumed). Only a field
    needed for weights or KV that is missing is an error, naming the field."""
    try:
        return _parse_config(model, config, hf_quant, native, declared)
    except InvalidField as exc:  # a value the rules passed on unchecked that a layer or the architecture refuses
        raise ConfigError(model, None, f"{exc} (from config.json)") from exc


def _parse_config(model: str, config: dict[str, Any], hf_quant: dict[str, Any] | None,
                  native: QuantScheme | None, declared: DeclaredParameters | None) -> Architecture:
    top = Fields(model, config)
    text = _text_block(top)
    model_type = text.raw("model_type") or top.raw("model_type")
    if model_type is None:
        raise ConfigError(model, "model_type", "is missing")
    family = FAMILIES.get(str(model_type))
    notes: list[str] = []
    if family is not None:
        text, defaulted = _with_defaults(text, top, family.defaults)
        if defaulted:
            notes.append(f"{model_type} config-class defaults used for: {', '.join(defaulted)}")
        layers, mtp = family.build(text)
        source = "family"
    else:
        text, aliases = _with_aliases(text)
        build, structure = _structural(text)
        layers, mtp = build(text)
        notes.append(_generic_note(str(model_type), text, aliases) if build is _generic else
                     f"unknown model_type {model_type!r} sized by the rule its fields call for: {structure}"
                     + ("; untied LM head (tie_word_embeddings absent)"
                        if text.data.get("tie_word_embeddings") is None else ""))
        source = "generic"
    hidden = text.int("hidden_size")
    vision_cfg = config.get("vision_config")
    vision = estimate_vision_parameters(vision_cfg, hidden) if isinstance(vision_cfg, dict) else 0
    extra = 0
    if str(model_type) == "gemma3n_text":
        extra += gemma3n_extra_parameters(text, len(layers))
    if text.has("hc_mult"):  # DeepSeek-V4 hyper-connections: mixing weights for attention and FFN per layer
        m = text.int("hc_mult")
        extra = len(layers) * 2 * (m * hidden) * (m * m + 2 * m)
    dtype = str(text.raw("dtype", text.raw("torch_dtype", top.raw("torch_dtype", top.raw("dtype", "bfloat16")))))
    if dtype.lower() not in DTYPE_BYTES:
        raise ConfigError(model, "torch_dtype", f"unknown dtype {dtype!r}")
    quant_source = config if "quantization_config" in config else text.data
    scheme = native or _native(model, quant_source, hf_quant, dtype, text.raw("expert_dtype"))
    if scheme.unsupported:
        notes.append(f"native format unknown: {scheme.unsupported}")
    tie = text.raw("tie_word_embeddings", top.raw("tie_word_embeddings", False))
    max_ctx = text.raw("max_position_embeddings") or text.raw("model_max_length")
    return Architecture(
        model=model, model_type=str(model_type), hidden_size=hidden, vocab_size=text.int("vocab_size"),
        tie_word_embeddings=bool(tie), layers=tuple(layers), mtp_layers=tuple(mtp), vision_parameters=vision,
        extra_parameters=extra, max_context=int(max_ctx) if max_ctx else None, dtype_bytes=DTYPE_BYTES[dtype.lower()],
        native=scheme, declared=declared, architecture_source=source, notes=tuple(notes),
    )
