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

from ..architecture import Architecture, DeclaredParameters, QuantScheme
from ..errors import ConfigError
from ..quantization import native_scheme
from ..record import InvalidField
from ..units import DTYPE_BYTES
from .defaults import (
    embedding_dim,
    extra_tensors,
    family_data,
    final_norm_vectors,
    normalise,
    states_a_shape,
)
from .encoder_decoder import encoder_decoder, is_encoder_decoder
from .families import gemma3n_extra_parameters, structural_builder
from .family_table import FAMILIES, Family  # noqa: F401 (FAMILIES is read through this module too)
from .fields import (
    COUNT_CEILINGS,
    Fields,
    checked_context,
    generic_layers,
    read_num_experts,
)
from .towers import image_tokens, tower_tensors


# ------------------------------------------------------------------------------------------ entry points
def load_json(model: str, text: str | bytes, what: str = "config.json") -> dict[str, Any]:
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(model, None, f"{what} is not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ConfigError(model, None, f"{what} must be a JSON object, got {type(data).__name__}")
    return data


#: Blocks that wrap the language model's config in multimodal and remote-code checkpoints (searched in this order;
#: a wrapper's own ``text_config`` is followed: Qwen2.5-Omni's ``thinker_config.text_config``).
TEXT_WRAPPERS = ("text_config", "llm_config", "language_config", "thinker_config", "llm_cfg", "text_cfg")

#: Configs without a model_type (remote code that never set one): the model_type their architectures imply.
_TYPE_OF_ARCHITECTURE = {"CogVLMForCausalLM": "cogvlm", "CogVLMVideoForCausalLM": "cogvlm"}


def _text_block(top: Fields) -> tuple[Fields, bool]:
    """The block that describes the language model, and whether it is a wrapper's sub-config.

    A sub-config that states no shape (a stub: Fuyu's ``{"model_type": "persimmon"}``) names the language model's
    family only: the shapes are then the wrapper's own top-level fields when it has them (read with the stub's
    model_type), else the family's class defaults (the block stays nested)."""
    block, nested = top, False
    for _ in range(2):
        key = next((k for k in TEXT_WRAPPERS if isinstance(block.data.get(k), dict) and block.data[k]), None)
        if key is None:
            break
        sub = block.sub(key)
        if not states_a_shape(sub.data) and states_a_shape(block.data):
            named = sub.raw("model_type")
            return Fields(block.model, {**block.data, **({"model_type": named} if named else {})}, block.path), nested
        block, nested = sub, True
    return block, nested


def _model_type(text: Fields, top: Fields) -> str | None:
    found = text.raw("model_type") or top.raw("model_type")
    if found is not None:
        return str(found)
    archs = top.raw("architectures")
    if isinstance(archs, list):
        return next((_TYPE_OF_ARCHITECTURE[a] for a in archs if isinstance(a, str) and a in _TYPE_OF_ARCHITECTURE),
                    None)
    return None


def _generic_note(model_type: str, text: Fields) -> str:
    assumed = ["GQA attention (num_key_value_heads, head_dim or hidden/heads)",
               "gated 3-matrix MLP" + (" / experts" if read_num_experts(text) else ""),
               "biases only where the config says so"]
    if text.data.get("tie_word_embeddings") is None:
        assumed.append("untied LM head (tie_word_embeddings absent)")
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
    text, nested = _text_block(top)
    model_type = _model_type(text, top)
    if model_type is None:
        raise ConfigError(model, "model_type", "is missing")
    text, notes = normalise(text, top, model_type, nested=nested)
    if model_type == "mllama_text_model":  # cross-attention keys/values per image: tiles x (patches + 1) tokens
        text = Fields(model, {**text.data, "_image_tokens": image_tokens(config.get("vision_config"))}, text.path)
    family = FAMILIES.get(model_type)
    seq2seq = encoder_decoder(text, model_type) if is_encoder_decoder(text, model_type) else None
    if seq2seq is not None:
        layers, mtp = seq2seq.decoder, []
        notes += seq2seq.notes
        source = "family" if family_data(model_type).get("encoder_decoder") else "generic"
    elif family is not None:
        layers, mtp = family.build(text)
        source = "family"
    else:
        build, structure = structural_builder(text)
        layers, mtp = build(text)
        notes.append(_generic_note(model_type, text) if build is generic_layers else
                     f"unknown model_type {model_type!r} sized by the rule its fields call for: {structure}"
                     + ("; untied LM head (tie_word_embeddings absent)"
                        if text.data.get("tie_word_embeddings") is None else ""))
        source = "generic"
    hidden = text.int("hidden_size")
    towers, tower_notes = tower_tensors(top, text, model_type)
    notes += tower_notes
    extra = 0
    if str(model_type) == "gemma3n_text":
        extra += gemma3n_extra_parameters(text, len(layers))
    if text.has("hc_mult"):  # DeepSeek-V4 hyper-connections: mixing weights for attention and FFN per layer
        m = text.int("hc_mult")
        extra = len(layers) * 2 * (m * hidden) * (m * m + 2 * m)
    dtype = str(text.raw("dtype", text.raw("torch_dtype", top.raw("torch_dtype", top.raw("dtype", "bfloat16")))))
    if dtype.lower() not in DTYPE_BYTES:
        raise ConfigError(model, "torch_dtype", f"unknown dtype {dtype!r}")
    quant_source = config if ("quantization_config" in config or "quantization" in config) else text.data
    scheme = native or _native(model, quant_source, hf_quant, dtype, text.raw("expert_dtype"))
    if scheme.towers and quant_source is not config and hf_quant is None:
        scheme = scheme.model_copy(update={"towers": False})  # a text_config's scheme covers the language model
    if scheme.unsupported:
        notes.append(f"native format unknown: {scheme.unsupported}")
    tie = text.raw("tie_word_embeddings", top.raw("tie_word_embeddings", False)) \
        and family_data(model_type).get("tie") != "always_separate"
    if text.raw("max_position_embeddings") is not None:
        max_ctx = checked_context(model, text.raw("max_position_embeddings"))
    else:  # tokenizer-style sentinels (1e30 = "no limit") mean unknown, not an error
        fallback = text.raw("model_max_length")
        max_ctx = fallback if isinstance(fallback, int) and 0 < fallback <= COUNT_CEILINGS["model_max_length"] else None
    fields: dict[str, Any] = dict(
        tie_word_embeddings=bool(tie), extra_tensors=tuple(extra_tensors(text, model_type)),
        final_norm_vectors=final_norm_vectors(text, model_type), max_context=max_ctx)
    if seq2seq is not None:
        fields |= seq2seq.architecture_fields(text, fields["extra_tensors"])
    return Architecture(
        model=model, model_type=str(model_type), hidden_size=hidden, vocab_size=text.int("vocab_size"),
        layers=tuple(layers), mtp_layers=tuple(mtp), tower_tensors=tuple(towers),
        extra_parameters=extra, embedding_dim=embedding_dim(text, model_type), dtype_bytes=DTYPE_BYTES[dtype.lower()],
        native=scheme, declared=declared, architecture_source=source, notes=tuple(notes), **fields,
    )
