"""Encoder-decoder configs (Whisper, M2M-100 / NLLB, BART-style, SeamlessM4T's text model): both stacks' weights,
the decoder's KV cache per token and the cross-attention cache of the encoder's tokens per request.

Read from the ``encoder_*`` / ``decoder_*`` fields (``d_model`` arrives as ``hidden_size``, ``config.defaults.normalise``).
What differs between families (the encoder's front end, which position tables are stored, Whisper's bias-free
``k_proj``, how many encoder tokens a request holds) is the ``encoder_decoder`` entry of the family's row in
``data/family_defaults.json``; a model_type without one is read with M2M-100's layout, and a note says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError
from ..layers import (
    DecoderLayer,
    DenseMLP,
    EncoderCrossAttention,
    EncoderLayer,
    FullAttention,
    SelfAndCrossAttention,
)
from ..tensors import Role, Tensor, vector
from ..units import DTYPE_BYTES
from .defaults import class_fields, family_data
from .fields import Fields, read_num_experts

#: The layout of a model_type whose row does not describe one: M2M-100's (token front end, positions not stored).
_DEFAULT_LAYOUT: dict[str, Any] = {"front_end": "tokens", "k_bias": True, "encoder_tokens": "max_position_embeddings",
                                   "final_norms": True}
#: Parts of a multi-task encoder-decoder that the text rule does not size (SeamlessM4T: speech encoder,
#: text-to-unit model, vocoder), named in a note when the config declares them.
_NOT_COUNTED = {"speech_encoder_layers": "speech encoder", "t2u_encoder_layers": "text-to-unit model",
                "upsample_initial_channel": "vocoder"}


#: The names each stack's fields go by: BART's, ProphetNet's, T5's (one count for both stacks when the decoder's is
#: not given), and the decoder's own standard names.
_STACK_FIELDS = {
    "encoder_layers": ("encoder_layers", "num_encoder_layers", "num_layers"),
    "decoder_layers": ("decoder_layers", "num_decoder_layers", "num_layers"),
    "encoder_attention_heads": ("encoder_attention_heads", "num_encoder_attention_heads", "num_heads",
                                "num_attention_heads"),
    "decoder_attention_heads": ("decoder_attention_heads", "num_decoder_attention_heads", "num_heads",
                                "num_attention_heads"),
    "encoder_ffn_dim": ("encoder_ffn_dim", "d_ff", "intermediate_size"),
    "decoder_ffn_dim": ("decoder_ffn_dim", "d_ff", "intermediate_size"),
}
#: Where a config states how many tokens the encoder takes, after the layout's own key.
_ENCODER_LENGTH = ("max_source_positions", "max_encoder_position_embeddings", "max_speech_positions",
                   "max_position_embeddings", "n_positions")


def is_encoder_decoder(c: Fields, model_type: str) -> bool:
    """A config with two stacks: stated the BART way (``encoder_layers`` and ``decoder_layers``) or ProphetNet's,
    or a model_type whose configuration class is an encoder-decoder (or a config that says it is one) giving both
    stacks' layer counts under any of their names (T5's ``num_layers`` / ``num_decoder_layers``)."""
    if c.has("encoder_layers") and c.has("decoder_layers"):
        return True
    if c.has("num_encoder_layers") and c.has("num_decoder_layers"):
        return True
    declared = c.raw("is_encoder_decoder") is True or bool(class_fields(model_type).get("encoder_decoder"))
    return declared and any(c.has(k) for k in _STACK_FIELDS["decoder_layers"]) \
        and any(c.has(k) for k in _STACK_FIELDS["encoder_layers"])


@dataclass(frozen=True)
class EncoderDecoder:
    """What an encoder-decoder config gives beyond the decoder layers."""

    decoder: list[DecoderLayer]
    encoder: list[EncoderLayer]
    extra: list[Tensor]  # front end, position tables, the encoder's final norm
    max_context: int | None  # the decoder's
    final_norm_vectors: int  # the decoder's final norm: LayerNorm weight and bias, or an RMS weight
    notes: list[str]

    def architecture_fields(self, c: Fields, extra: tuple[Tensor, ...]) -> dict[str, Any]:
        """What an encoder-decoder sets on the Architecture: the encoder stack, its tensors beside the family's,
        the decoder's final norm, its context, and the LM head tied to the token embeddings unless the config says
        otherwise (PretrainedConfig's default, which these classes keep)."""
        return dict(encoder_layers=tuple(self.encoder), extra_tensors=(*extra, *self.extra),
                    final_norm_vectors=self.final_norm_vectors, max_context=self.max_context,
                    tie_word_embeddings=c.bool("tie_word_embeddings", True))


def encoder_decoder(c: Fields, model_type: str) -> EncoderDecoder:
    layout = family_data(model_type).get("encoder_decoder")
    notes = [] if layout else [f"encoder-decoder {model_type!r} read with M2M-100's layout (no row of its own)"]
    layout = layout or _DEFAULT_LAYOUT
    if read_num_experts(c):
        raise ConfigError(c.model, "num_experts", "an encoder-decoder with experts (Switch, NLLB-MoE) is not sized: "
                                                  "its expert layers are not modelled")
    d = c.int("hidden_size")
    bias, k_bias = bool(layout.get("bias", True)), bool(layout.get("k_bias", True))
    per_norm = 1 if layout.get("norm") == "rms" else 2  # an RMS norm's weight, or a LayerNorm's weight and bias
    gated = str(c.raw("feed_forward_proj", "")).startswith("gated")
    # the encoder's keys and values are kept at 16 bits where the checkpoint is float32 (served in bf16/fp16)
    dtype = min(2.0, DTYPE_BYTES.get(str(c.raw("dtype", c.raw("torch_dtype", "bfloat16"))).lower(), 2))
    tokens_key = next((k for k in (str(layout["encoder_tokens"]), *_ENCODER_LENGTH) if c.has(k)), None)
    if tokens_key is not None:
        encoder_tokens = c.int(tokens_key)
    elif layout.get("encoder_tokens_default"):  # relative positions: no length in the config (T5)
        encoder_tokens, tokens_key = int(layout["encoder_tokens_default"]), "assumed: the config states no length"
    else:
        raise ConfigError(c.model, str(layout["encoder_tokens"]), "is missing (the encoder's input length)")
    field = {name: c.first_int(*keys) for name, keys in _STACK_FIELDS.items()}
    enc_heads, dec_heads = field["encoder_attention_heads"], field["decoder_attention_heads"]

    def head_dim(heads: int) -> int:
        return c.int("head_dim") if c.has("head_dim") else d // heads

    def attention(heads: int) -> FullAttention:
        return FullAttention(num_heads=heads, num_kv_heads=heads, head_dim=head_dim(heads), bias=bias, o_bias=bias,
                             k_bias=k_bias)

    encoder = [EncoderLayer(attention=attention(enc_heads),
                            mlp=DenseMLP(intermediate=field["encoder_ffn_dim"], gated=gated, bias=bias),
                            norm_vectors=2 * per_norm)
               for _ in range(field["encoder_layers"])]
    cross = EncoderCrossAttention(num_heads=dec_heads, num_kv_heads=dec_heads, head_dim=head_dim(dec_heads),
                                  encoder_tokens=encoder_tokens, cache_dtype_bytes=dtype, bias=bias, k_bias=k_bias)
    decoder = [DecoderLayer(mixer=SelfAndCrossAttention(attention=attention(dec_heads), cross=cross),
                            mlp=DenseMLP(intermediate=field["decoder_ffn_dim"], gated=gated, bias=bias),
                            norms=3 * per_norm)  # three norms: before self-attention, cross-attention, MLP
               for _ in range(field["decoder_layers"])]
    extra: list[Tensor] = []
    if layout.get("front_end") == "audio_conv":  # conv1 (mel -> d, kernel 3) and conv2 (d -> d, kernel 3), biases:
        mel = c.int("num_mel_bins")                # the audio front end, kept 16-bit as towers are
        extra.append(Tensor("model.encoder.conv1", Role.AUDIO, d, 3 * mel))
        extra.append(Tensor("model.encoder.conv2", Role.AUDIO, d, 3 * d))
        extra.append(vector("model.encoder", "conv_biases", 2 * d, None))
    for stack in ("encoder", "decoder"):
        rows = layout.get(f"{stack}_positions")
        if rows:
            extra.append(Tensor(f"model.{stack}.embed_positions", Role.POSITION, c.int(str(rows)), d))
    buckets = layout.get("relative_buckets")
    if buckets:  # T5: a (buckets x heads) bias table in the first layer of each stack (UMT5: in every layer)
        per_stack = {"encoder": (len(encoder), enc_heads), "decoder": (len(decoder), dec_heads)}
        for stack, (n, heads) in per_stack.items():
            tables = n if layout.get("relative_tables") == "per_layer" else 1
            extra.append(Tensor(f"model.{stack}.relative_attention_bias", Role.POSITION, c.int(str(buckets), 32),
                                heads, count=tables))
    if layout.get("final_norms"):
        extra.append(vector("model.encoder", "final_layer_norm", per_norm * d, None))  # the decoder's: the model's
    ctx_key = next((k for k in ("max_target_positions", "max_position_embeddings", "n_positions") if c.has(k)), None)
    notes.append(f"encoder-decoder: {len(encoder)} encoder layers (weights only, run once per request) and "
                 f"{len(decoder)} decoder layers; KV cache = decoder self-attention per token + cross-attention "
                 f"keys and values of {encoder_tokens:,} encoder tokens ({tokens_key}) per request")
    missing = [what for key, what in _NOT_COUNTED.items() if c.has(key)]
    if missing:
        notes.append("not counted: " + ", ".join(missing) + " (the text encoder-decoder only)")
    return EncoderDecoder(decoder=decoder, encoder=encoder, extra=extra,
                          max_context=c.int(ctx_key) if ctx_key else None, final_norm_vectors=per_norm,
                          notes=notes)
