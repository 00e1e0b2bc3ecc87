"""Parse a Hugging Face ``config.json`` into an :class:`Architecture`.

One builder per architecture family. Layer kinds are resolved from whichever encoding the config uses
(``layer_types``, ``full_attention_interval``, ``linear_attn_config``, ``hybrid_override_pattern``,
``hybrid_layer_pattern``, ``block_configs``, ``compress_ratios``, ``sliding_window`` rules, ...). A missing field
raises :class:`ConfigError` naming the model and the field; nothing falls back to a silent default except where
the model's own code documents the default (noted where used).
"""

from __future__ import annotations

import json
from typing import Any

from .architecture import Architecture, DeclaredParameters, QuantScheme
from .errors import ConfigError
from .hf_families import gemma3n_extra_parameters, structural_builder
from .hf_family_table import FAMILIES, Family  # noqa: F401 (FAMILIES is read through this module too)
from .hf_fields import (
    COUNT_CEILINGS,
    Fields,
    checked_context,
    generic_layers,
    read_num_experts,
)
from .quantization import native_scheme
from .record import InvalidField
from .units import DTYPE_BYTES


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
               "gated 3-matrix MLP" + (" / experts" if read_num_experts(text) else ""),
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
        build, structure = structural_builder(text)
        layers, mtp = build(text)
        notes.append(_generic_note(str(model_type), text, aliases) if build is generic_layers else
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
    if text.raw("max_position_embeddings") is not None:
        max_ctx = checked_context(model, text.raw("max_position_embeddings"))
    else:  # tokenizer-style sentinels (1e30 = "no limit") mean unknown, not an error
        fallback = text.raw("model_max_length")
        max_ctx = fallback if isinstance(fallback, int) and 0 < fallback <= COUNT_CEILINGS["model_max_length"] else None
    return Architecture(
        model=model, model_type=str(model_type), hidden_size=hidden, vocab_size=text.int("vocab_size"),
        tie_word_embeddings=bool(tie), layers=tuple(layers), mtp_layers=tuple(mtp), vision_parameters=vision,
        extra_parameters=extra, max_context=max_ctx, dtype_bytes=DTYPE_BYTES[dtype.lower()],
        native=scheme, declared=declared, architecture_source=source, notes=tuple(notes),
    )
