"""The family table: one builder per architecture family whose modelling code differs from the standard decoder,
the table itself is ``sizing_core/config/family_table.py``. For an unknown ``model_type``, ``structural_builder`` picks the builder
its fields call for.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ..errors import ConfigError
from ..layers import (
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
    ParallelHybrid,
    ShortConv,
    SlidingWindowAttention,
)
from ..units import DTYPE_BYTES
from .fields import (
    EXPERT_COUNT_KEYS,
    LATENT_KEYS,
    Fields,
    Layers,
    attention_kinds,
    attention_mixer,
    generic_layers,
    gqa_kwargs,
    is_moe_layer,
    mlp_for_layer,
    read_mtp_count,
    read_num_experts,
    read_num_layers,
    read_shared_width,
    read_top_k,
)


def structural_builder(c: Fields) -> tuple[Callable[[Fields], Layers], str]:
    """For an unknown model_type: the builder its fields call for. A new name on a known structure (an MLA
    model, a Nemotron-H style hybrid, ...) is read by that structure's fields, not as a plain decoder."""
    if isinstance(c.raw("linear_attn_config"), dict):
        return kimi_linear_layers, "Kimi Delta Attention + MLA layers (linear_attn_config present)"
    if c.has("compress_ratios"):
        return deepseek_v4_layers, "compressed sparse attention (compress_ratios present)"
    if c.has("kv_lora_rank"):
        return deepseek_layers, "MLA attention (kv_lora_rank present): one latent per token"
    if c.has("hybrid_layer_pattern") and c.has("swa_num_key_value_heads"):
        return mimo_v2_layers, "hybrid_layer_pattern with separate sliding-window shapes"
    if c.has("global_head_dim") or c.has("num_global_key_value_heads"):
        return gemma4_layers, "sliding and global layers with their own KV shapes (global_head_dim present)"
    if c.has("attention_chunk_size") and c.has("intermediate_size_mlp"):
        return llama4_layers, "chunked local attention with interleaved MoE (attention_chunk_size present)"
    if c.has("linear_num_value_heads"):
        return qwen_hybrid_layers, "Gated DeltaNet hybrid (linear_num_value_heads present)"
    if c.has("hybrid_override_pattern") or (c.has("layers_block_type") and c.has("mamba_num_heads")):
        return nemotron_h_layers, "Mamba2 hybrid blocks (hybrid_override_pattern / layers_block_type present)"
    if c.has("block_configs"):
        return decilm_layers, "per-layer block_configs"
    if c.has("mamba_d_ssm") and c.has("num_attention_heads"):
        return falcon_h1_layers, "parallel attention + Mamba2 in every layer (mamba_d_ssm present)"
    return generic_layers, "standard decoder"


def gpt_oss_layers(c: Fields) -> Layers:
    n = c.int("num_hidden_layers")
    gqa = gqa_kwargs(c, bias=True, o_bias=True, sinks=True)
    kinds = attention_kinds(c, n)
    moe = MoE(num_experts=read_num_experts(c), top_k=read_top_k(c), expert_intermediate=c.int("intermediate_size"),
              expert_bias=True, router_bias=True)
    return [DecoderLayer(mixer=attention_mixer(c, kinds[i], **gqa), mlp=moe) for i in range(n)], []


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


def deepseek_layers(c: Fields) -> Layers:
    """DeepSeek-V2/V3/R1, Kimi-K2, GLM-4.7-Flash, GLM-5 (MLA, shared experts, first_k_dense_replace)."""
    n = c.int("num_hidden_layers")
    mla = _mla(c)
    router_bias = c.raw("topk_method") == "noaux_tc"
    layers = [DecoderLayer(mixer=mla, mlp=mlp_for_layer(c, i, n, router_bias=router_bias)) for i in range(n)]
    return layers, [layers[-1]] * read_mtp_count(c)


def deepseek_v4_layers(c: Fields) -> Layers:
    n = c.int("num_hidden_layers")
    ratios = c.list("compress_ratios", n)
    common = dict(num_heads=c.int("num_attention_heads"), head_dim=c.int("head_dim"), q_lora_rank=c.int("q_lora_rank"),
                  o_lora_rank=c.int("o_lora_rank"), o_groups=c.int("o_groups"), window=c.int("sliding_window"),
                  indexer_heads=c.int("index_n_heads", 0, minimum=0),
                  indexer_head_dim=c.int("index_head_dim", 0, minimum=0),
                  indexer_topk=c.int("index_topk", 0, minimum=0))
    moe = MoE(num_experts=read_num_experts(c), top_k=read_top_k(c), expert_intermediate=c.int("moe_intermediate_size"),
              shared_intermediate=read_shared_width(c), router_bias=True)

    def layer(i: int) -> DecoderLayer:
        ratio = ratios[i] if i < len(ratios) else 0
        return DecoderLayer(mixer=CompressedSparseAttention(compress_ratio=int(ratio), **common), mlp=moe)

    return [layer(i) for i in range(n)], [layer(n + j) for j in range(read_mtp_count(c))]


def qwen_hybrid_layers(c: Fields) -> Layers:
    """Qwen3-Next and Qwen3.5: Gated DeltaNet layers with gated full attention every few layers."""
    n = c.int("num_hidden_layers")
    kinds = attention_kinds(c, n)
    dtype = str(c.raw("dtype", c.raw("torch_dtype", "bfloat16")))
    gdn = GatedDeltaNet(
        num_k_heads=c.int("linear_num_key_heads"), num_v_heads=c.int("linear_num_value_heads"),
        k_head_dim=c.int("linear_key_head_dim"), v_head_dim=c.int("linear_value_head_dim"),
        conv_kernel=c.int("linear_conv_kernel_dim"), conv_dtype_bytes=c.dtype_bytes("torch_dtype", dtype),
        ssm_dtype_bytes=c.dtype_bytes("mamba_ssm_dtype", dtype),
    )
    attn = FullAttention(**gqa_kwargs(c, q_gate=c.bool("attn_output_gate", True), qk_norm=True))

    def mixer(kind: str) -> Mixer:
        if kind == "linear_attention":
            return gdn
        if kind == "full_attention":
            return attn
        raise ConfigError(c.model, "layer_types", f"unknown layer kind {kind!r}")

    layers = [DecoderLayer(mixer=mixer(kinds[i]), mlp=mlp_for_layer(c, i, n, shared_gate=True)) for i in range(n)]
    mtp = [DecoderLayer(mixer=attn, mlp=layers[-1].mlp)] * read_mtp_count(c)
    return layers, mtp


def kimi_linear_layers(c: Fields) -> Layers:
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
    return [DecoderLayer(mixer=mla if i in full else kda, mlp=mlp_for_layer(c, i, n, router_bias=True)) for i in range(n)], []


_BLOCK_NAMES = {"mamba": "M", "attention": "*", "mlp": "-", "moe": "E", "M": "M", "*": "*", "-": "-", "E": "E"}


def _block_pattern(c: Fields, key: str) -> str:
    """A ``layers_block_type`` list (``mamba``/``attention``/``mlp``/``moe``) as hybrid_override_pattern characters."""
    kinds = [str(k) for k in c.list(key)]
    if bad := sorted(set(kinds) - set(_BLOCK_NAMES)):
        raise ConfigError(c.model, key, f"unknown block kinds {bad}")
    return "".join(_BLOCK_NAMES[k] for k in kinds)


def nemotron_h_layers(c: Fields) -> Layers:
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
                   conv_bias=c.bool("use_conv_bias", True), conv_dtype_bytes=c.dtype_bytes("torch_dtype", dtype),
                   ssm_dtype_bytes=c.dtype_bytes("mamba_ssm_cache_dtype", dtype))
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
            return DecoderLayer(mlp=MoE(num_experts=c.first_int(*EXPERT_COUNT_KEYS), top_k=read_top_k(c),
                                        expert_intermediate=c.int("moe_intermediate_size"), shared_intermediate=shared,
                                        gated=False, router_bias=True, latent_size=c.first_int(*LATENT_KEYS, default=0, minimum=0)))
        raise ConfigError(c.model, field, f"unknown block character {ch!r}")

    layers = [block(ch, "hybrid_override_pattern") for ch in pattern]
    mtp_pattern = (_block_pattern(c, "mtp_layers_block_type") if c.has("mtp_layers_block_type")
                   else str(c.raw("mtp_hybrid_override_pattern", "")))
    mtp = [block(ch, "mtp_hybrid_override_pattern") for ch in mtp_pattern]
    return layers, mtp * read_mtp_count(c)


def _model_dtype(c: Fields) -> float:
    dtype = str(c.raw("dtype", c.raw("torch_dtype", "bfloat16"))).lower()
    return DTYPE_BYTES.get(dtype, 2)


def lfm2_layers(c: Fields) -> Layers:
    """LFM2 (Liquid): short-convolution layers and GQA attention layers (``layer_types`` or ``full_attn_idxs``),
    each followed by a SwiGLU MLP whose width Lfm2Config adjusts: 2/3 of ``block_ff_dim``, times
    ``block_ffn_dim_multiplier``, rounded up to ``block_multiple_of``; MoE layers (``lfm2_moe``) after
    ``num_dense_layers``."""
    n = read_num_layers(c)
    if c.has("layer_types"):
        kinds = [str(k) for k in c.list("layer_types", n)[:n]]
    else:  # neither: Lfm2Config makes every layer attention (full_attn_idxs defaults to all of them)
        full = {int(i) for i in c.list("full_attn_idxs")} if c.has("full_attn_idxs") else set(range(n))
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
    attn = FullAttention(**gqa_kwargs(c, qk_norm=True))
    dense_first = c.int("num_dense_layers", 0, minimum=0)
    layers = []
    for i, kind in enumerate(kinds):
        if kind not in ("conv", "full_attention", "attention"):
            raise ConfigError(c.model, "layer_types", f"unknown LFM2 layer kind {kind!r}")
        if read_num_experts(c) and i >= dense_first:
            mlp: MLP = MoE(num_experts=read_num_experts(c), top_k=read_top_k(c), expert_intermediate=c.int("moe_intermediate_size"),
                           router_bias=c.bool("use_expert_bias"))
        else:
            mlp = DenseMLP(intermediate=ff)
        layers.append(DecoderLayer(mixer=conv if kind == "conv" else attn, mlp=mlp))
    return layers, []


def granite_hybrid_layers(c: Fields) -> Layers:
    """Granite 4.0 (granitemoehybrid): Mamba2 and attention layers from ``layer_types``; every layer has a
    shared SwiGLU MLP of ``shared_intermediate_size`` and, when ``num_local_experts`` > 0, routed experts of
    ``intermediate_size`` beside it."""
    n = read_num_layers(c)
    kinds = [str(k) for k in c.list("layer_types", n)[:n]] if c.has("layer_types") else ["attention"] * n
    heads = c.int("mamba_n_heads", 1)
    dtype = _model_dtype(c)
    mamba = Mamba2(num_heads=heads, head_dim=c.first_int("mamba_d_head", default=c.int("mamba_expand", 2)
                                                         * c.int("hidden_size") // heads),
                   n_groups=c.int("mamba_n_groups", 1), state_size=c.int("mamba_d_state", 128),
                   conv_kernel=c.int("mamba_d_conv", 4), conv_bias=c.bool("mamba_conv_bias", True),
                   conv_dtype_bytes=dtype, ssm_dtype_bytes=dtype) if "mamba" in kinds else None
    attn = FullAttention(**gqa_kwargs(c, bias=c.bool("attention_bias")))
    shared = c.int("shared_intermediate_size", 0, minimum=0)
    experts = c.int("num_local_experts", 0, minimum=0)
    if experts:
        mlp: MLP = MoE(num_experts=experts, top_k=read_top_k(c), expert_intermediate=c.int("intermediate_size"),
                       shared_intermediate=shared)
    else:
        mlp = DenseMLP(intermediate=shared or c.int("intermediate_size"))
    layers = []
    for kind in kinds:
        if kind not in ("mamba", "attention"):
            raise ConfigError(c.model, "layer_types", f"unknown Granite hybrid layer kind {kind!r}")
        layers.append(DecoderLayer(mixer=mamba if kind == "mamba" else attn, mlp=mlp))
    return layers, []


def falcon_h1_layers(c: Fields) -> Layers:
    """Falcon-H1: every layer runs GQA attention and a Mamba2 mixer in parallel (``mamba_d_ssm`` inner width,
    ``mamba_n_heads`` x ``mamba_d_head``), then a SwiGLU MLP."""
    n = read_num_layers(c)
    heads = c.int("mamba_n_heads")
    dtype = _model_dtype(c)
    auto = c.raw("mamba_d_head") == "auto"  # FalconH1Config's default: mamba_d_ssm / mamba_n_heads
    ssm = Mamba2(num_heads=heads, head_dim=c.int("mamba_d_ssm") // heads if auto else
                 c.first_int("mamba_d_head", default=c.int("mamba_d_ssm") // heads),
                 n_groups=c.int("mamba_n_groups", 1), state_size=c.int("mamba_d_state"),
                 conv_kernel=c.int("mamba_d_conv", 4), conv_bias=c.bool("mamba_conv_bias", True),
                 conv_dtype_bytes=dtype, ssm_dtype_bytes=dtype)
    mixer = ParallelHybrid(attention=FullAttention(**gqa_kwargs(c, bias=c.bool("attention_bias"))), ssm=ssm)
    layer = DecoderLayer(mixer=mixer, mlp=DenseMLP(intermediate=c.int("intermediate_size"),
                                                   bias=c.bool("projectors_bias")))
    return [layer] * n, []


def gemma3n_layers(c: Fields) -> Layers:
    """Gemma 3n: 4 sliding : 1 global layers whose last ``num_kv_shared_layers`` reuse earlier layers' KV (no
    cache of their own); per-head q/k norms; per-layer MLP widths. Its per-layer embeddings, AltUp and LAuReL
    weights are added as extra parameters (``gemma3n_extra_parameters``)."""
    n = read_num_layers(c)
    kinds = attention_kinds(c, n)
    shared_from = n - c.int("num_kv_shared_layers", 0, minimum=0)
    widths = c.raw("intermediate_size")
    layers = []
    for i in range(n):
        gqa = gqa_kwargs(c, qk_norm=True, kv_shared=i >= shared_from)
        width = widths[i] if isinstance(widths, list) else c.int("intermediate_size")
        layers.append(DecoderLayer(mixer=attention_mixer(c, kinds[i], **gqa), mlp=DenseMLP(intermediate=int(width)),
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


def decilm_layers(c: Fields) -> Layers:
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


def llama4_layers(c: Fields) -> Layers:
    """Llama 4: chunked local attention on three layers of four (the fourth is global, NoPE); MoE layers
    interleaved every ``interleave_moe_layer_step`` with one shared expert; dense layers use
    ``intermediate_size_mlp``."""
    n = c.int("num_hidden_layers")
    gqa = gqa_kwargs(c, qk_norm=c.bool("use_qk_norm"))
    chunk = c.int("attention_chunk_size")
    rope = c.raw("no_rope_layers") or [int((i + 1) % 4 != 0) for i in range(n)]  # HF Llama4TextConfig default
    layers = []
    for i in range(n):
        mixer = ChunkedLocalAttention(chunk=chunk, **gqa) if rope[i] else FullAttention(**gqa)
        if is_moe_layer(c, i, n):
            inter = c.int("intermediate_size")
            mlp: MLP = MoE(num_experts=read_num_experts(c), top_k=read_top_k(c), expert_intermediate=inter,
                           shared_intermediate=inter)
        else:
            mlp = DenseMLP(intermediate=c.int("intermediate_size_mlp"))
        layers.append(DecoderLayer(mixer=mixer, mlp=mlp))
    return layers, []


def gemma4_layers(c: Fields) -> Layers:
    """Gemma 4: sliding layers (``head_dim``, ``num_key_value_heads``) and global layers (``global_head_dim``,
    ``num_global_key_value_heads``, keys doubling as values when ``attention_k_eq_v``)."""
    n = c.int("num_hidden_layers")
    heads = c.int("num_attention_heads")
    kinds = attention_kinds(c, n)
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


def mimo_v2_layers(c: Fields) -> Layers:
    """MiMo-V2-Flash: ``hybrid_layer_pattern`` 0 = global attention, 1 = sliding window with its own shapes."""
    n = c.int("num_hidden_layers")
    pattern = c.list("hybrid_layer_pattern", n)
    glob = FullAttention(**gqa_kwargs(c, v_head_dim=c.int("v_head_dim")))
    local = SlidingWindowAttention(
        num_heads=c.int("swa_num_attention_heads"), num_kv_heads=c.int("swa_num_key_value_heads"),
        head_dim=c.int("swa_head_dim"), v_head_dim=c.int("swa_v_head_dim"),
        sinks=c.bool("add_swa_attention_sink_bias"), window=c.first_int("sliding_window_size", "sliding_window"))
    layers = [DecoderLayer(mixer=local if pattern[i] else glob, mlp=mlp_for_layer(c, i, n, router_bias=True))
              for i in range(n)]
    return layers, [layers[-1]] * read_mtp_count(c)
