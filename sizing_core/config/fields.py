"""One block of a Hugging Face ``config.json`` as fields, and the standard decoder built from them.

Shared by the generic reader (``sizing_core/config/reader.py``) and the family builders (``sizing_core/config/families.py``): head dims, attention
kinds from whichever encoding the config uses, experts, MLP widths, the layer count. A missing field raises
:class:`ConfigError` naming the model and the field.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..errors import ConfigError
from ..layers import (
    MLP,
    ChunkedLocalAttention,
    DecoderLayer,
    DenseMLP,
    FullAttention,
    LinearAttention,
    Mixer,
    MoE,
    SlidingWindowAttention,
)
from ..units import DTYPE_BYTES

#: Upper bounds on the counts a config states: the largest real model with a wide margin, so a hostile or broken
#: config (10^9 layers, a context of 10^18) is refused with one line instead of sizing or allocating absurdly.
#: Largest seen (Dec 2026): 126 layers (Llama-3.1-405B), 512 routed experts (Qwen3.5-397B), 10,485,760 tokens of
#: context (Llama-4-Scout), 262,144 vocabulary entries (Gemma 3), hidden size 16,384 (Llama-3.1-405B),
#: 128 attention heads (Llama-3.1-405B / DeepSeek-V3), MLP width 53,248 (Llama-3.1-405B).
COUNT_CEILINGS = {
    **dict.fromkeys(("num_hidden_layers", "n_layer", "num_layers", "n_layers"), 1024),
    **dict.fromkeys(("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts"), 8192),
    **dict.fromkeys(("max_position_embeddings", "model_max_length", "seq_length", "n_positions"), 2**28),
    "vocab_size": 2**23,
    **dict.fromkeys(("hidden_size", "n_embd", "d_model"), 2**18),
    **dict.fromkeys(("num_attention_heads", "num_key_value_heads", "n_head"), 2**14),
    **dict.fromkeys(("intermediate_size", "moe_intermediate_size", "ffn_hidden_size"), 2**21),
}
ANY_COUNT_CEILING = 2**40  # any other count (a window, a rank, a pattern length): still far below absurd


def checked_context(model: str, value: object, key: str = "max_position_embeddings") -> int | None:
    """A config's maximum context as a positive integer within :data:`COUNT_CEILINGS`, or None when absent."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or int(value) != value or value < 1:
        raise ConfigError(model, key, f"must be a positive integer, got {value!r}")
    if value > COUNT_CEILINGS[key]:
        raise ConfigError(model, key, f"{value!r} is beyond any real model (at most {COUNT_CEILINGS[key]:,})")
    return int(value)


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
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
                or int(value) != value:
            raise ConfigError(self.model, self._name(key), f"must be an integer, got {value!r}")
        if value < minimum:
            raise ConfigError(self.model, self._name(key), f"must be >= {minimum}, got {value!r}")
        ceiling = COUNT_CEILINGS.get(key, ANY_COUNT_CEILING)
        if value > ceiling:
            raise ConfigError(self.model, self._name(key), f"{value!r} is beyond any real model (at most {ceiling:,})")
        return int(value)

    def number(self, key: str, default: float) -> float:
        """A positive finite number (a ratio or factor), ``default`` when absent."""
        value = self.data.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0 \
                or value > ANY_COUNT_CEILING:
            raise ConfigError(self.model, self._name(key), f"must be a positive number, got {value!r}")
        return float(value)

    def dtype_bytes(self, key: str, default: str = "bfloat16") -> float:
        """Bytes per element of a dtype named by ``key`` (``torch_dtype``, ``mamba_ssm_dtype``, ...)."""
        name = str(self.raw(key, default)).lower()
        if name not in DTYPE_BYTES:
            raise ConfigError(self.model, self._name(key), f"unknown dtype {name!r}")
        return DTYPE_BYTES[name]

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


def gqa_kwargs(c: Fields, **extra: Any) -> dict[str, Any]:
    heads = c.int("num_attention_heads")
    return dict(num_heads=heads, num_kv_heads=c.int("num_key_value_heads", heads), head_dim=_head_dim(c), **extra)


_KIND_ALIASES = {"attention": "full_attention", "global": "full_attention", "full": "full_attention",
                 "global_attention": "full_attention", "sliding": "sliding_attention", "local": "sliding_attention",
                 "local_attention": "sliding_attention", "sliding_window": "sliding_attention",
                 "chunked_attention": "chunked_attention", "linear": "linear_attention"}


def attention_kinds(c: Fields, n: int) -> list[str]:
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


def attention_mixer(c: Fields, kind: str, **gqa: Any) -> Mixer:
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


EXPERT_COUNT_KEYS = ("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts")
_TOP_K = ("num_experts_per_tok", "num_experts_per_token", "experts_per_token", "top_k_experts", "moe_topk", "moe_k",
          "moe_top_k", "num_activated_experts")
_EXPERT_WIDTH = ("moe_intermediate_size", "expert_intermediate_size", "moe_ffn_hidden_size", "intermediate_size")
_SHARED_COUNT = ("n_shared_experts", "num_shared_experts", "moe_num_shared_experts", "num_shared_expert")
_FIRST_DENSE = ("first_k_dense_replace", "moe_layer_start_index", "first_dense_layers")
#: The expert width of latent MoE (Nemotron 3 Super, Kimi K3): routed experts run in a smaller space.
LATENT_KEYS = ("moe_latent_size", "routed_expert_hidden_size", "moe_latent_hidden_size")


def read_top_k(c: Fields) -> int:
    return c.first_int(*_TOP_K)


#: Switches that turn a config's experts off (Doge's ``is_moe``: its num_experts is read only when it is true).
MOE_SWITCHES = ("is_moe", "use_moe", "moe_enabled")


def read_num_experts(c: Fields) -> int:
    if any(c.has(k) and c.raw(k) is False for k in MOE_SWITCHES):
        return 0
    return c.first_int(*EXPERT_COUNT_KEYS, default=0, minimum=0)


def is_moe_layer(c: Fields, i: int, n: int) -> bool:
    """Which layers carry experts, from DeepSeek, Qwen, GLM, ERNIE and Llama-4 style switches."""
    if read_num_experts(c) == 0:
        return False
    if c.has("mlp_layer_types"):
        return c.list("mlp_layer_types", n)[i] == "sparse"
    if c.has("is_moe_layer"):  # EXAONE MoE: one boolean per layer
        return bool(c.list("is_moe_layer", n)[i])
    if i < c.first_int(*_FIRST_DENSE, default=0, minimum=0):
        return False
    end = c.int("moe_layer_end_index", minimum=-1) if c.has("moe_layer_end_index") else -1
    if end >= 0 and i > end:  # -1: through the last layer (Ernie4_5_MoeConfig)
        return False
    if c.has("mlp_only_layers") and i in c.list("mlp_only_layers"):
        return False
    freq = c.raw("moe_layer_freq")
    if isinstance(freq, list):
        return bool(c.list("moe_layer_freq", n)[i])
    step = c.first_int("moe_layer_freq", "decoder_sparse_step", "interleave_moe_layer_step", "moe_layer_interval",
                       default=1)
    if c.has("interleave_moe_layer_step"):
        return (i + 1) % step == 0
    return i % step == 0


def read_shared_width(c: Fields) -> int:
    for key in ("shared_expert_intermediate_size", "shared_intermediate_size", "moe_shared_expert_intermediate_size"):
        if c.has(key):
            width = c.int(key, minimum=0)
            return width * c.first_int(*_SHARED_COUNT, default=1, minimum=0) if key.startswith("moe_shared") \
                else width
    shared = c.first_int(*_SHARED_COUNT, default=0, minimum=0)
    per = c.first_int("share_expert_dim", *_EXPERT_WIDTH, default=0, minimum=0)
    return shared * per


def mlp_for_layer(c: Fields, i: int, n: int, *, gated: bool = True, bias: bool = False, **moe_extra: Any) -> MLP:
    if is_moe_layer(c, i, n):
        return MoE(num_experts=read_num_experts(c), top_k=read_top_k(c), expert_intermediate=c.first_int(*_EXPERT_WIDTH),
                   shared_intermediate=read_shared_width(c), latent_size=c.first_int(*LATENT_KEYS, default=0, minimum=0),
                   gated=gated, **moe_extra)
    return DenseMLP(intermediate=c.first_int("intermediate_size", "ffn_hidden_size"), gated=gated, bias=bias)


def read_mtp_count(c: Fields) -> int:
    return c.first_int("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules", default=0, minimum=0)


def read_num_layers(c: Fields) -> int:
    """``num_hidden_layers``, or the length of a per-layer list when the config only gives that."""
    if c.has("num_hidden_layers"):
        return c.int("num_hidden_layers")
    for key in ("layer_types", "layers_block_type"):
        if isinstance(c.raw(key), list) and c.raw(key):
            return len(c.raw(key))
    return c.int("num_hidden_layers")


# ------------------------------------------------------------------------------------------ families
Layers = tuple[list[DecoderLayer], list[DecoderLayer]]  # (decoder layers, MTP layers)


def decoder(c: Fields, *, qk_norm: bool | None = None, qk_norm_full: bool = False, attn_bias: bool | None = None,
             o_bias: bool | None = None, fused_qkv: bool = False, gated: bool = True, mlp_bias: bool | None = None,
             router_bias: bool | None = None, shared_gate: bool = False, norms: int | None = None) -> Layers:
    """The standard decoder: GQA attention (full, sliding or windowed per layer) and a dense or MoE MLP.

    Every switch left at ``None`` is read from the config's own field (``use_qk_norm``/``qk_layernorm``,
    ``attention_bias``/``qkv_bias``/``use_bias``/``bias``, ``mlp_bias``, ``use_moe_router_bias``/
    ``use_routing_bias``); the family table fixes the ones a family's code hard-wires.
    """
    n = read_num_layers(c)
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
    gqa = gqa_kwargs(c, qk_norm=qk_norm, qk_norm_full=qk_norm_full, bias=attn_bias, o_bias=o_bias, fused_qkv=fused_qkv)
    kinds = attention_kinds(c, n)
    layers = [DecoderLayer(mixer=attention_mixer(c, kinds[i], **gqa),
                           mlp=mlp_for_layer(c, i, n, gated=gated, bias=mlp_bias, router_bias=router_bias,
                                    **({"shared_gate": True} if shared_gate else {})),
                           norms=norms)
              for i in range(n)]
    return layers, [layers[-1]] * read_mtp_count(c)


def standard(**switches: Any) -> Callable[[Fields], Layers]:
    """A family that is the standard decoder with some switches fixed by its modelling code."""
    return lambda c: decoder(c, **switches)


def generic_layers(c: Fields) -> Layers:
    return decoder(c)
