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
    LinearReplacement,
    Mamba2,
    Mixer,
    MLAAttention,
    MoE,
    SlidingWindowAttention,
)
from .quantization import native_scheme
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


def _attention_kinds(c: Fields, n: int) -> list[str]:
    """``full_attention`` / ``sliding_attention`` / ``linear_attention`` per layer from any known encoding."""
    if c.has("layer_types"):
        kinds = [str(k) for k in c.list("layer_types", n)[:n]]
        return ["full_attention" if k == "attention" else k for k in kinds]
    if c.has("full_attention_interval"):
        every = c.int("full_attention_interval")
        return ["full_attention" if (i + 1) % every == 0 else "linear_attention" for i in range(n)]
    if c.has("sliding_window_pattern") and c.has("sliding_window"):
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


def _attention(c: Fields, kind: str, **gqa: Any) -> Mixer:
    if kind == "full_attention":
        return FullAttention(**gqa)
    if kind == "sliding_attention":
        return SlidingWindowAttention(window=c.int("sliding_window"), **gqa)
    raise ConfigError(c.model, "layer_types", f"unknown attention kind {kind!r}")


def _top_k(c: Fields) -> int:
    return c.first_int("num_experts_per_tok", "num_experts_per_token", "experts_per_token", "top_k_experts",
                       "moe_topk")


def _num_experts(c: Fields) -> int:
    return c.first_int("num_experts", "n_routed_experts", "num_local_experts", default=0, minimum=0)


def _is_moe_layer(c: Fields, i: int, n: int) -> bool:
    """Which layers carry experts, from DeepSeek, Qwen, GLM and Llama-4 style switches."""
    if _num_experts(c) == 0:
        return False
    if c.has("mlp_layer_types"):
        return c.list("mlp_layer_types", n)[i] == "sparse"
    if i < c.int("first_k_dense_replace", 0, minimum=0):
        return False
    if i in (c.raw("mlp_only_layers") or []):
        return False
    freq = c.raw("moe_layer_freq")
    if isinstance(freq, list):
        return bool(c.list("moe_layer_freq", n)[i])
    step = c.first_int("moe_layer_freq", "decoder_sparse_step", "interleave_moe_layer_step", default=1)
    if c.has("interleave_moe_layer_step"):
        return (i + 1) % step == 0
    return i % step == 0


def _shared_width(c: Fields) -> int:
    if c.has("shared_expert_intermediate_size"):
        return c.int("shared_expert_intermediate_size", minimum=0)
    shared = c.first_int("n_shared_experts", "num_shared_experts", default=0, minimum=0)
    per = c.first_int("share_expert_dim", "moe_intermediate_size", default=0, minimum=0)
    return shared * per


def _mlp(c: Fields, i: int, n: int, **moe_extra: Any) -> MLP:
    if _is_moe_layer(c, i, n):
        return MoE(num_experts=_num_experts(c), top_k=_top_k(c),
                   expert_intermediate=c.first_int("moe_intermediate_size", "intermediate_size"),
                   shared_intermediate=_shared_width(c), **moe_extra)
    return DenseMLP(intermediate=c.int("intermediate_size"))


def _mtp_count(c: Fields) -> int:
    return c.first_int("num_nextn_predict_layers", "mtp_num_hidden_layers", default=0, minimum=0)


# ------------------------------------------------------------------------------------------ families
Layers = tuple[list[DecoderLayer], list[DecoderLayer]]  # (decoder layers, MTP layers)


def _generic(c: Fields) -> Layers:
    """Dense and MoE transformers with GQA attention and optional sliding windows (Llama, Mistral, Qwen2/3,
    Qwen3-MoE, Mixtral, Phi-3, MiMo, Step-3.x, ...)."""
    n = c.int("num_hidden_layers")
    qk_norm = c.raw("model_type", "").startswith("qwen3") or c.bool("use_qk_norm")
    bias = c.bool("attention_bias") or c.bool("qkv_bias") or c.raw("model_type") == "qwen2"
    gqa = _gqa(c, qk_norm=qk_norm, bias=bias, fused_qkv=c.raw("model_type") == "phi3")
    kinds = _attention_kinds(c, n)
    router_bias = c.bool("use_moe_router_bias")
    layers = [DecoderLayer(mixer=_attention(c, kinds[i], **gqa), mlp=_mlp(c, i, n, router_bias=router_bias))
              for i in range(n)]
    return layers, [layers[-1]] * _mtp_count(c)


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


def _nemotron_h(c: Fields) -> Layers:
    """Nemotron-H / Nemotron 3: one block per pattern character, M=Mamba2, *=attention, -=MLP, E=MoE."""
    pattern = str(c.raw("hybrid_override_pattern", ""))
    n = c.int("num_hidden_layers")
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
            return DecoderLayer(mlp=MoE(num_experts=c.int("n_routed_experts"), top_k=_top_k(c),
                                        expert_intermediate=c.int("moe_intermediate_size"), shared_intermediate=shared,
                                        gated=False, router_bias=True, latent_size=c.int("moe_latent_size", 0, minimum=0)))
        raise ConfigError(c.model, field, f"unknown block character {ch!r}")

    layers = [block(ch, "hybrid_override_pattern") for ch in pattern]
    mtp = [block(ch, "mtp_hybrid_override_pattern") for ch in str(c.raw("mtp_hybrid_override_pattern", ""))]
    return layers, mtp * _mtp_count(c)


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


FAMILIES: dict[str, Callable[[Fields], Layers]] = {
    **{t: _generic for t in ("llama", "mistral", "qwen2", "qwen3", "qwen2_moe", "qwen3_moe", "mixtral", "phi3",
                             "mimo", "qwen3_vl_text", "qwen3_vl_moe_text", "step3p7", "granite", "olmo2")},
    "gpt_oss": _gpt_oss,
    **{t: _deepseek for t in ("deepseek_v2", "deepseek_v3", "deepseek_v32", "kimi_k2", "glm4_moe_lite",
                              "glm_moe_dsa")},
    "deepseek_v4": _deepseek_v4,
    **{t: _qwen_hybrid for t in ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text")},
    "kimi_linear": _kimi_linear,
    "nemotron_h": _nemotron_h,
    "nemotron-nas": _decilm,
    "llama4_text": _llama4,
    "gemma4_text": _gemma4,
    "mimo_v2_flash": _mimo_v2,
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


def parse_config(model: str, config: dict[str, Any], hf_quant: dict[str, Any] | None = None,
                 native: QuantScheme | None = None, declared: DeclaredParameters | None = None) -> Architecture:
    """Build the architecture of ``model`` from its parsed config (and optional ModelOpt sidecar)."""
    top = Fields(model, config)
    text = top.sub("text_config") if isinstance(config.get("text_config"), dict) else top
    model_type = text.raw("model_type") or top.raw("model_type")
    if model_type is None:
        raise ConfigError(model, "model_type", "is missing")
    builder = FAMILIES.get(str(model_type))
    if builder is None:
        raise ConfigError(model, f"{text.path}model_type",
                          f"unknown model_type {model_type!r} (known: {', '.join(sorted(FAMILIES))})")
    layers, mtp = builder(text)
    hidden = text.int("hidden_size")
    vision_cfg = config.get("vision_config")
    vision = estimate_vision_parameters(vision_cfg, hidden) if isinstance(vision_cfg, dict) else 0
    extra = 0
    if text.has("hc_mult"):  # DeepSeek-V4 hyper-connections: mixing weights for attention and FFN per layer
        m = text.int("hc_mult")
        extra = len(layers) * 2 * (m * hidden) * (m * m + 2 * m)
    dtype = str(text.raw("dtype", text.raw("torch_dtype", top.raw("torch_dtype", top.raw("dtype", "bfloat16")))))
    if dtype.lower() not in DTYPE_BYTES:
        raise ConfigError(model, "torch_dtype", f"unknown dtype {dtype!r}")
    quant_source = config if "quantization_config" in config else text.data
    scheme = native or native_scheme(model, quant_source, hf_quant, dtype, text.raw("expert_dtype"))
    tie = text.raw("tie_word_embeddings", top.raw("tie_word_embeddings", False))
    max_ctx = text.raw("max_position_embeddings") or text.raw("model_max_length")
    return Architecture(
        model=model, model_type=str(model_type), hidden_size=hidden, vocab_size=text.int("vocab_size"),
        tie_word_embeddings=bool(tie), layers=tuple(layers), mtp_layers=tuple(mtp), vision_parameters=vision,
        extra_parameters=extra, max_context=int(max_ctx) if max_ctx else None, dtype_bytes=DTYPE_BYTES[dtype.lower()],
        native=scheme, declared=declared,
    )
