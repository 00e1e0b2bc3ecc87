"""The typed architecture every sizing computation starts from (built from a config.json or a manual spec)."""

from __future__ import annotations

from collections import Counter
from functools import cached_property

from .layers import DecoderLayer, EncoderLayer, MoE, SelfAndCrossAttention
from .record import Record, checked, record
from .tensors import Role, Tensor, matrix, vector


@record
class QuantScheme(Record):
    """How a checkpoint's own (``native``) weights are stored, read from its quantization config.

    ``weight_format`` applies to linear weights, ``expert_format`` (when set) to routed experts instead; modules
    matching ``exclude`` (glob, or ``re:`` regular expression, as the configs write them) stay in ``dtype``.
    """

    source: str  # "quantization_config", "hf_quant_config.json", "torch_dtype", "spec"
    weight_format: str
    expert_format: str | None = None
    group_size: int | None = checked(None, kind=int, gt=0)
    block_size: tuple[int, int] | None = None
    exclude: tuple[str, ...] = ()
    experts_only: bool = False  # only routed experts are quantized (gpt-oss style MXFP4)
    kv_cache_dtype: str | None = None  # what the checkpoint recommends for the KV cache
    #: per-module formats (ModelOpt MIXED_PRECISION ``quantized_layers``): (module path, format, group size);
    #: linear weights under none of them stay in the checkpoint dtype.
    per_module: tuple[tuple[str, str, int | None], ...] = ()
    #: compressed-tensors config_groups: (targets, format, group size) per group; a target is "Linear" (every linear
    #: layer), a "re:" regular expression or a module name; the first group whose targets match decides
    targeted: tuple[tuple[tuple[str, ...], str, int | None], ...] = ()
    #: MLX per-module quantization (mlx-lm's ``quant_predicate``: MoE routers at 8 bits, mixed recipes): (module
    #: path, format, group size) replacing the base format for that module, a router's weight included
    overrides: tuple[tuple[str, str, int | None], ...] = ()
    unsupported: str | None = None  # why the scheme could not be read: native weights are then unknown (null)
    #: the scheme converts every linear layer, the vision/audio towers' too, unless its exclusions name a tower
    #: (bitsandbytes, compressed-tensors, ModelOpt, FP8); GPTQ/AWQ/MLX quantize the language model only
    towers: bool = False
    embeddings: bool = False  # token embeddings and LM head quantized too (MLX's nn.quantize)


@record
class DeclaredParameters(Record):
    """Parameter counts stated by a source other than config arithmetic (a spec, safetensors metadata)."""

    total: int = checked(kind=int, gt=0)
    active: int | None = checked(None, kind=int, gt=0)
    source: str


@record
class Architecture(Record):
    """A model as sizing sees it. Frozen; the tensor list is computed once per object (``cached_property``)."""

    model: str  # repo id or registry id, used in every error and report
    model_type: str
    hidden_size: int = checked(kind=int, gt=0)
    vocab_size: int = checked(kind=int, gt=0)
    tie_word_embeddings: bool = False
    layers: tuple[DecoderLayer, ...]
    mtp_layers: tuple[DecoderLayer, ...] = ()  # multi-token-prediction heads: in the checkpoint, not served
    #: an encoder-decoder's encoder stack (Whisper, M2M-100): run once per request, caching nothing; its weights are
    #: in ``tensors`` (model-level, no decoder layer index), its front end and positions in ``extra_tensors``
    encoder_layers: tuple[EncoderLayer, ...] = ()
    vision_parameters: int = 0  # a tower known only by its parameter count (a spec); configs give tower_tensors
    extra_parameters: int = 0  # small architecture-specific blocks (hyper-connections, per-layer embeddings)
    #: model-level tensors outside the standard decoder: learned positions, an embedding LayerNorm, an LM-head bias
    extra_tensors: tuple[Tensor, ...] = ()
    #: vision and audio towers with their projectors, counted from the towers' own configs (``sizing_core/config/towers.py``)
    tower_tensors: tuple[Tensor, ...] = ()
    final_norm_vectors: int = 1  # hidden-size vectors of the final norm: 2 for LayerNorm with bias, 0 for OLMo's
    embedding_dim: int | None = None  # width of the token embeddings and LM head when not hidden_size (OPT-350m)
    max_context: int | None = None
    dtype_bytes: float = 2  # the checkpoint's unquantized dtype
    native: QuantScheme
    declared: DeclaredParameters | None = None
    architecture_source: str = "family"  # "family" (a row of config.reader.FAMILIES), "generic", or "spec"
    notes: tuple[str, ...] = ()  # what was assumed: generic rule, family defaults, unknown quantization

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    @cached_property
    def tensors(self) -> tuple[Tensor, ...]:
        """Every served weight group: embeddings, decoder layers, final norm, LM head (once if tied), vision."""
        h = self.hidden_size
        e = self.embedding_dim or h
        out: list[Tensor] = [matrix("model", "embed_tokens", Role.TOKEN_EMBD, self.vocab_size, e, None)]
        for i, layer in enumerate(self.layers):
            out += layer.tensors(f"model.layers.{i}", h, i)
        for i, enc in enumerate(self.encoder_layers):
            out += enc.tensors(f"model.encoder.layers.{i}", h, None)
        if self.final_norm_vectors:
            out.append(vector("model", "norm", self.final_norm_vectors * h, None))
        if not self.tie_word_embeddings:
            out.append(Tensor("lm_head", Role.OUTPUT, self.vocab_size, e))
        out += self.extra_tensors
        out += self.tower_tensors
        if self.vision_parameters:
            out.append(Tensor("model.visual", Role.VISION, self.vision_parameters, 1))
        if self.extra_parameters:
            out.append(Tensor("model.extra", Role.NORM, self.extra_parameters, 1))
        return tuple(out)

    @cached_property
    def mtp_tensors(self) -> tuple[Tensor, ...]:
        h = self.hidden_size
        out: list[Tensor] = []
        for j, layer in enumerate(self.mtp_layers):
            i = self.num_layers + j
            out += layer.tensors(f"model.layers.{i}", h, i)
            out.append(matrix(f"model.layers.{i}", "eh_proj", Role.ATTN_OTHER, h, 2 * h, i))
            out.append(vector(f"model.layers.{i}", "enorm_hnorm", 2 * h, i))
        return tuple(out)

    @cached_property
    def is_moe(self) -> bool:
        """Any decoder layer routes over experts (engines' FP8 MoE kernel rules ask this per GPU and format)."""
        return self.moe_layers > 0

    @cached_property
    def moe_layers(self) -> int:
        """Decoder layers whose MLP routes over experts."""
        return sum(1 for layer in self.layers if isinstance(layer.mlp, MoE))

    @property
    def encoder_tokens(self) -> int | None:
        """An encoder-decoder's encoder tokens per request, whose keys and values every decoder layer keeps (None
        for a decoder-only model)."""
        return next((layer.mixer.cross.encoder_tokens for layer in self.layers
                     if isinstance(layer.mixer, SelfAndCrossAttention)), None)

    def mixer_counts(self) -> dict[str, int]:
        """Decoder layers per mixer kind (``none`` for MLP-only layers)."""
        return dict(Counter(layer.mixer.kind if layer.mixer else "none" for layer in self.layers))

    def mlp_counts(self) -> dict[str, int]:
        return dict(Counter(layer.mlp.kind if layer.mlp else "none" for layer in self.layers))

    def attention_layers(self) -> list[int]:
        """Indices of layers whose mixer keeps a per-token cache (llama.cpp's attn_v counter runs over these)."""
        return [i for i, layer in enumerate(self.layers) if layer.mixer and layer.mixer.attends]
