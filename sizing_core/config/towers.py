"""Vision and audio towers counted from the tower's own config, tensor group by tensor group.

Each reader restates one modelling file's shapes (transformers v4.57.1 unless noted): CLIP (``clip_vision_model``),
SigLIP, Qwen2-VL / Qwen2.5-VL / Qwen3-VL (and Qwen3.5's, the same vision model), Pixtral with Mistral 3's patch
merger, InternViT (``intern_vit_6b`` remote code and in-library ``internvl_vision``), Mllama's tiled ViT, CogVLM2's
EVA-CLIP with its GLU adapter, DeepSeek-VL2's SigLIP / DeepSeek-OCR-2's SAM + Qwen2 encoder, and Whisper-style audio
encoders (Qwen2-Audio, Qwen2.5-Omni). Projectors are counted with their tower (LLaVA's 2-layer MLP, VILA's
``mlp_downsample``, InternVL's ``mlp1``, Gemma 3's soft-embedding projection, Mllama's, Qwen2-Audio's).

Towers named but not described by a config (Phi-3-vision's ``img_processor.model_name``, Molmo's hard-coded ViT,
DeepSeek-OCR-2's ``qwen2-0-5b``) use the named checkpoint's published shapes (``NAMED_TOWERS``). A vision config of
no known shape is estimated as before (depth x (4 d^2 + 2 d I) + patch embedding + 2x2 merger) and the note says so.

Tensors: a tower's linear weights are matrices (role VISION or AUDIO); everything else (embeddings, convolutions,
norms, biases, gates) is one column, so "more than one column" means "a linear layer a quantizer may touch".
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..tensors import Role, Tensor
from .fields import Fields

#: Shapes of towers that configs name instead of describing (from the named checkpoints' public configs).
NAMED_TOWERS: dict[str, dict[str, Any]] = {
    # openai/clip-vit-large-patch14-336 config.json vision_config
    "openai/clip-vit-large-patch14-336": {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24,
                                          "num_attention_heads": 16, "image_size": 336, "patch_size": 14},
    # Qwen/Qwen2-0.5B config.json (DeepSeek-OCR-2's encoder is its decoder stack without the token embedding)
    "qwen2-0-5b": {"hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14,
                   "num_key_value_heads": 2},
    # allenai Molmo modeling_molmo.py VisionBackboneConfig defaults: a CLIP ViT-L/14-336 of 23 layers
    "molmo-vit": {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 23, "image_size": 336,
                  "patch_size": 14},
}


def _dict(value: Any) -> dict[str, Any]:  # noqa: ANN401 - a config value
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:  # noqa: ANN401 - a config value
    return value if isinstance(value, list) else []


def _ratio(value: Any, default: float) -> float:  # noqa: ANN401 - a config value
    """A positive finite number (an MLP ratio, a downsample ratio), else ``default``."""
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and 0 < value < 1e6
    return float(value) if ok else default


class _Tower:
    """Collects one tower's tensors under a module prefix."""

    def __init__(self, role: Role = Role.VISION):
        self.role, self.out = role, []  # type: ignore[var-annotated]

    def linear(self, name: str, out: int, inp: int, *, bias: bool = True, count: int = 1) -> None:
        self.out.append(Tensor(name, self.role, out, inp, count))
        if bias:
            self.out.append(Tensor(f"{name}.bias", self.role, out, 1, count))

    def other(self, name: str, numel: int, count: int = 1) -> None:
        """Anything that is not a linear weight: embeddings, convolutions, norms, gates (never quantized)."""
        if numel:
            self.out.append(Tensor(name, self.role, numel, 1, count))

    def norm(self, name: str, d: int, *, bias: bool = True, count: int = 1) -> None:
        self.other(name, d * (2 if bias else 1), count)


def _f(cfg: Any, *keys: str, default: int = 0) -> int:  # noqa: ANN401 - a config block, maybe not a dict
    """The first of ``keys`` that is a positive integer in ``cfg`` (else ``default``): towers read what is there."""
    if not isinstance(cfg, dict):
        return default
    for k in keys:
        v = cfg.get(k)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            return v
    return default


def _vit_blocks(t: _Tower, p: str, d: int, inner: int, n: int, *, qkv_bias: bool = True, o_bias: bool = True,
                fused: bool = False, gated: bool = False, mlp_bias: bool = True, ln_bias: bool = True,
                extra_per_layer: int = 0) -> None:
    """``n`` pre-norm ViT layers: attention (q/k/v/o or fused qkv), MLP (fc1/fc2, or gate/up/down), two norms."""
    if fused:
        t.linear(f"{p}.attn.qkv", 3 * d, d, bias=qkv_bias, count=n)
    else:
        for name in ("q_proj", "k_proj", "v_proj"):
            t.linear(f"{p}.attn.{name}", d, d, bias=qkv_bias, count=n)
    t.linear(f"{p}.attn.proj", d, d, bias=o_bias, count=n)
    if gated:
        t.linear(f"{p}.mlp.gate_proj", inner, d, bias=mlp_bias, count=n)
    t.linear(f"{p}.mlp.fc1", inner, d, bias=mlp_bias, count=n)
    t.linear(f"{p}.mlp.fc2", d, inner, bias=mlp_bias, count=n)
    t.norm(f"{p}.norms", 2 * d, bias=ln_bias, count=n)
    t.other(f"{p}.layer_extras", extra_per_layer, count=n)


# ------------------------------------------------------------------------------------------ vision towers
def clip(t: _Tower, v: dict[str, Any], p: str = "vision_tower") -> int:
    """CLIPVisionModel: class embedding, patch conv (no bias), position table ((image/patch)^2 + 1), pre and post
    LayerNorm, layers with biased q/k/v/o and fc1/fc2. Returns the width."""
    d, i, n = _f(v, "hidden_size", default=768), _f(v, "intermediate_size", default=3072), _f(v, "num_hidden_layers", default=12)
    patch, image, ch = _f(v, "patch_size", default=32), _f(v, "image_size", default=224), _f(v, "num_channels", default=3)
    t.other(f"{p}.embeddings", d + ch * patch * patch * d + ((image // patch) ** 2 + 1) * d)
    t.norm(f"{p}.pre_layrnorm", d)
    _vit_blocks(t, f"{p}.encoder.layers", d, i, n)
    t.norm(f"{p}.post_layernorm", d)
    return d


def siglip(t: _Tower, v: dict[str, Any], p: str = "vision_tower", head: bool | None = None) -> int:
    """SiglipVisionModel: patch conv with bias, position table (image/patch)^2, layers as CLIP, post LayerNorm, and
    the attention-pooling head when ``vision_use_head`` (default true)."""
    d, i, n = _f(v, "hidden_size", default=768), _f(v, "intermediate_size", default=3072), _f(v, "num_hidden_layers", default=12)
    patch, image, ch = _f(v, "patch_size", default=16), _f(v, "image_size", default=224), _f(v, "num_channels", default=3)
    t.other(f"{p}.embeddings", ch * patch * patch * d + d + (image // patch) ** 2 * d)
    _vit_blocks(t, f"{p}.encoder.layers", d, i, n)
    t.norm(f"{p}.post_layernorm", d)
    if v.get("vision_use_head", True) if head is None else head:
        t.other(f"{p}.head.probe", d)
        t.linear(f"{p}.head.attention.in_proj", 3 * d, d)
        t.linear(f"{p}.head.attention.out_proj", d, d)
        t.norm(f"{p}.head.layernorm", d)
        t.linear(f"{p}.head.mlp.fc1", i, d)
        t.linear(f"{p}.head.mlp.fc2", d, i)
    return d


def qwen_vl(t: _Tower, v: dict[str, Any], text_hidden: int) -> None:
    """Qwen2-VL (embed_dim, mlp_ratio), Qwen2.5-VL (gated MLP of intermediate_size, RMSNorm) and Qwen3-VL / 3.5
    (LayerNorm, position table, biased patch conv, deepstack mergers) vision models with their patch mergers."""
    p = "visual"
    qwen3 = "deepstack_visual_indexes" in v or "num_position_embeddings" in v
    qwen25 = not qwen3 and ("out_hidden_size" in v or "fullatt_block_indexes" in v)
    d = _f(v, "embed_dim") if not (qwen25 or qwen3) else _f(v, "hidden_size")
    d = d or _f(v, "hidden_size", "embed_dim", default=1280)
    n = _f(v, "depth", "num_hidden_layers", default=32)
    patch, temporal = _f(v, "patch_size", default=14), _f(v, "temporal_patch_size", default=2)
    ch, merge = _f(v, "in_channels", "in_chans", default=3), _f(v, "spatial_merge_size", default=2)
    out = _f(v, "out_hidden_size") if (qwen25 or qwen3) else _f(v, "hidden_size")
    out = out or text_hidden
    conv = ch * temporal * patch * patch * d
    if qwen3:
        inner = _f(v, "intermediate_size", default=4 * d)
        t.other(f"{p}.patch_embed", conv + d)
        t.other(f"{p}.pos_embed", _f(v, "num_position_embeddings", default=2304) * d)
        _vit_blocks(t, f"{p}.blocks", d, inner, n, fused=True)
    elif qwen25:
        inner = _f(v, "intermediate_size", default=3420)
        t.other(f"{p}.patch_embed", conv)
        _vit_blocks(t, f"{p}.blocks", d, inner, n, fused=True, gated=True, ln_bias=False)
    else:
        inner = int(d * _ratio(v.get("mlp_ratio"), 4))
        t.other(f"{p}.patch_embed", conv)
        _vit_blocks(t, f"{p}.blocks", d, inner, n, fused=True)
    wide = d * merge * merge

    def merger(name: str, norm_width: int) -> None:
        t.norm(f"{name}.ln_q", norm_width, bias=not qwen25)
        t.linear(f"{name}.mlp.0", wide, wide)
        t.linear(f"{name}.mlp.2", out, wide)

    merger(f"{p}.merger", d)
    if qwen3:
        for k in range(len(_list(v.get("deepstack_visual_indexes")))):
            merger(f"{p}.deepstack_merger_list.{k}", wide)


def pixtral(t: _Tower, v: dict[str, Any], p: str = "vision_tower") -> int:
    """PixtralVisionModel: patch conv without bias, RMSNorm ln_pre, layers with bias-free q/k/v/o and gated MLP."""
    d, i, n = _f(v, "hidden_size", default=1024), _f(v, "intermediate_size", default=4096), _f(v, "num_hidden_layers", default=24)
    patch, ch = _f(v, "patch_size", default=16), _f(v, "num_channels", default=3)
    t.other(f"{p}.patch_conv", ch * patch * patch * d)
    t.norm(f"{p}.ln_pre", d, bias=False)
    _vit_blocks(t, f"{p}.transformer.layers", d, i, n, qkv_bias=False, o_bias=False, gated=True, mlp_bias=False,
                ln_bias=False)
    return d


def intern_vit(t: _Tower, v: dict[str, Any], p: str = "vision_model") -> int:
    """InternViT (remote ``intern_vit_6b`` and in-library ``internvl_vision``): class token, biased patch conv,
    position table ((image/patch)^2 + 1), layers with fused qkv (bias ``qkv_bias``/``attention_bias``), optional
    q/k RMSNorm over the width, fc1/fc2, two norms and two layer-scale vectors."""
    d, i, n = _f(v, "hidden_size", default=1024), _f(v, "intermediate_size", default=4096), _f(v, "num_hidden_layers", default=24)
    patch, image, ch = _f(v, "patch_size", default=14), _f(v, "image_size", default=448), _f(v, "num_channels", default=3)
    if isinstance(v.get("image_size"), list):
        image = _f({"x": (_list(v["image_size"]) or [None])[0]}, "x", default=448)
    if isinstance(v.get("patch_size"), list):
        patch = _f({"x": (_list(v["patch_size"]) or [None])[0]}, "x", default=14)
    rms = str(v.get("norm_type", "layer_norm")) == "rms_norm"
    qk_norm = bool(v.get("qk_normalization") or v.get("use_qk_norm"))
    t.other(f"{p}.embeddings", d + ch * patch * patch * d + d + ((image // patch) ** 2 + 1) * d)
    _vit_blocks(t, f"{p}.encoder.layers", d, i, n, fused=True, qkv_bias=bool(v.get("qkv_bias", v.get("attention_bias", True))),
                ln_bias=not rms, extra_per_layer=2 * d + (2 * d if qk_norm else 0))
    return d


def image_tokens(v: Any) -> int:  # noqa: ANN401 - a config value
    """Vision states one Mllama image yields for the cross-attention layers: max_num_tiles x ((image/patch)^2 + 1)."""
    v = v if isinstance(v, dict) else {}
    return _f(v, "max_num_tiles", default=4) * ((_f(v, "image_size", default=560) // _f(v, "patch_size", default=14)) ** 2 + 1)


def mllama_vision(t: _Tower, v: dict[str, Any], text_hidden: int) -> None:
    """MllamaVisionModel: patch conv, class embedding, gated position table and tile embeddings, pre/post-tile
    aspect-ratio embeddings, a local (bias-free attention) and a gated global encoder, and the projector from
    ``vision_output_dim``."""
    p = "vision_model"
    d, i = _f(v, "hidden_size", default=1280), _f(v, "intermediate_size", default=5120)
    n, g = _f(v, "num_hidden_layers", default=32), _f(v, "num_global_layers", default=8)
    patch, image, ch = _f(v, "patch_size", default=14), _f(v, "image_size", default=448), _f(v, "num_channels", default=3)
    tiles = _f(v, "max_num_tiles", default=4)
    ratios = len(_list(v.get("supported_aspect_ratios")) or [[1, 1]] * 8)
    patches = (image // patch) ** 2 + 1
    t.other(f"{p}.patch_embedding", ch * patch * patch * d)
    t.other(f"{p}.embeddings", d + patches * d + 1 + (ratios + 1) * tiles * patches * d + 2 * ((ratios + 1) * tiles * d + 1))
    t.norm(f"{p}.layernorm_pre_post", 2 * d)
    _vit_blocks(t, f"{p}.transformer.layers", d, i, n, qkv_bias=False, o_bias=False)
    _vit_blocks(t, f"{p}.global_transformer.layers", d, i, g, qkv_bias=False, o_bias=False, extra_per_layer=2)
    t.linear("multi_modal_projector", text_hidden, _f(v, "vision_output_dim", default=7680))


def eva_clip(t: _Tower, v: dict[str, Any], text_hidden: int, text_inner: int) -> None:
    """CogVLM2's EVA2-CLIP-E (fused biased query_key_value, dense, fc1/fc2, LayerNorms) and its GLU adapter: a 2x2
    conv, linear_proj to the text width, LayerNorm, gate/up to the text MLP width, down, boi/eoi embeddings."""
    p = "model.vision"
    d, i, n = _f(v, "hidden_size", default=1792), _f(v, "intermediate_size", default=15360), _f(v, "num_hidden_layers", default=63)
    patch, ch = _f(v, "patch_size", default=14), _f(v, "in_channels", "num_channels", default=3)
    positions = _f(v, "num_positions", default=(_f(v, "image_size", default=224) // patch) ** 2 + 1)
    t.other(f"{p}.patch_embedding", ch * patch * patch * d + d + d + positions * d)
    _vit_blocks(t, f"{p}.transformer.layers", d, i, n, fused=True)
    t.other(f"{p}.conv", d * d * 4 + d)
    t.linear(f"{p}.linear_proj.linear_proj", text_hidden, d, bias=False)
    t.norm(f"{p}.linear_proj.norm1", text_hidden)
    for name in ("dense_h_to_4h", "gate_proj"):
        t.linear(f"{p}.linear_proj.{name}", text_inner, text_hidden, bias=False)
    t.linear(f"{p}.linear_proj.dense_4h_to_h", text_hidden, text_inner, bias=False)
    t.other(f"{p}.boi_eoi", 2 * text_hidden)


def _decoder_stack(t: _Tower, p: str, cfg: dict[str, Any]) -> None:
    """A Qwen2-style decoder used as an encoder (q/k/v biases, GQA, SwiGLU, RMSNorms), without token embeddings."""
    d, i, n = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    hd = d // cfg["num_attention_heads"]
    kv = cfg["num_key_value_heads"] * hd
    t.linear(f"{p}.self_attn.q_proj", d, d, count=n)
    t.linear(f"{p}.self_attn.k_proj", kv, d, count=n)
    t.linear(f"{p}.self_attn.v_proj", kv, d, count=n)
    t.linear(f"{p}.self_attn.o_proj", d, d, bias=False, count=n)
    for name in ("gate_proj", "up_proj"):
        t.linear(f"{p}.mlp.{name}", i, d, bias=False, count=n)
    t.linear(f"{p}.mlp.down_proj", d, i, bias=False, count=n)
    t.norm(f"{p}.norms", 2 * d, bias=False, count=n)
    t.norm(f"{p}.norm", d, bias=False)


def deepseek_vl2(t: _Tower, top: dict[str, Any], text_hidden: int) -> list[str]:
    """DeepSeek-VL2 (timm SigLIP: width / layers / mlp_ratio, no head) with its downsample MLP projector and
    DeepSeek-OCR-2 (``deepencoderv2``: SAM ViT-B with neck and two downsampling convs, then a Qwen2-0.5B decoder
    stack as encoder) with its linear projector. Returns notes."""
    v, proj = _dict(top.get("vision_config")), _dict(top.get("projector_config"))
    width = v.get("width")
    notes = []
    if isinstance(width, dict):  # DeepSeek-OCR-2
        sam = _dict(width.get("sam_vit_b"))
        d, n = _f(sam, "width", default=768), _f(sam, "layers", default=12)
        glob = len(_list(sam.get("global_attn_indexes")))
        image, patch = _f(v, "image_size", default=1024), 16
        side = image // patch
        t.other("vision.sam.patch_embed", 3 * patch * patch * d + d + side * side * d)
        _vit_blocks(t, "vision.sam.blocks", d, 4 * d, n, fused=True)
        t.other("vision.sam.rel_pos", 2 * 64 * ((n - glob) * (2 * 14 - 1) + glob * (2 * side - 1)))
        t.other("vision.sam.neck", d * 256 + 512 + 256 * 256 * 9 + 512)
        down = [_f({"c": c}, "c", default=512) for c in _list(sam.get("downsample_channels")) or [512, 1024]]
        prev = 256
        for c in down:
            t.other(f"vision.sam.net_{c}", prev * c * 9)
            prev = c
        if "qwen2-0-5b" in width:
            _decoder_stack(t, "vision.qwen2.layers", NAMED_TOWERS["qwen2-0-5b"])
            notes.append("DeepSeek-OCR-2 encoder: SAM ViT-B (config) + Qwen2-0.5B layers (shapes of Qwen/Qwen2-0.5B, "
                         "named by the config)")
        t.linear("projector.layers", _f(proj, "n_embed", default=text_hidden), _f(proj, "input_dim", default=896))
        return notes
    d = _f(v, "width", default=1152)
    inner = int(d * _ratio(v.get("mlp_ratio"), 3.7362))
    patch, image = _f(v, "patch_size", default=14), _f(v, "image_size", default=384)
    t.other("vision.patch_embed", 3 * patch * patch * d + d + (image // patch) ** 2 * d)
    _vit_blocks(t, "vision.blocks", d, inner, _f(v, "layers", default=27), fused=True)
    t.norm("vision.norm", d)
    ratio = _f(proj, "downsample_ratio", default=2)
    width_in = _f(proj, "input_dim", default=d) * ratio * ratio
    out = _f(proj, "n_embed", default=text_hidden)
    mlp_ratio = _f(proj, "mlp_ratio", default=1)
    t.linear("projector.layers.0", out * mlp_ratio, width_in)
    for k in range(1, _f(proj, "depth", default=2)):
        t.linear(f"projector.layers.{k}", out, out * mlp_ratio)
    t.other("image_newline_view_seperator", 2 * out)
    return notes


def whisper_encoder(t: _Tower, a: dict[str, Any], text_hidden: int) -> None:
    """Whisper-style audio encoder (Qwen2-Audio, Qwen2.5-Omni thinker): two conv1d, a position table of
    ``max_source_positions``, layers with q/v/o biases (k without), fc1/fc2, two LayerNorms, a final LayerNorm;
    the projector into the text width."""
    p = "audio_tower"
    d = _f(a, "d_model", "hidden_size", default=1280)
    n = _f(a, "encoder_layers", "num_hidden_layers", default=32)
    i = _f(a, "encoder_ffn_dim", "intermediate_size", default=4 * d)
    mel = _f(a, "num_mel_bins", default=128)
    t.other(f"{p}.conv", mel * d * 3 + d + d * d * 3 + d)
    t.other(f"{p}.embed_positions", _f(a, "max_source_positions", default=1500) * d)
    t.linear(f"{p}.layers.self_attn.q_proj", d, d, count=n)
    t.linear(f"{p}.layers.self_attn.k_proj", d, d, bias=False, count=n)
    t.linear(f"{p}.layers.self_attn.v_proj", d, d, count=n)
    t.linear(f"{p}.layers.self_attn.out_proj", d, d, count=n)
    t.linear(f"{p}.layers.fc1", i, d, count=n)
    t.linear(f"{p}.layers.fc2", d, i, count=n)
    t.norm(f"{p}.layers.norms", 2 * d, count=n)
    t.norm(f"{p}.layer_norm", d)
    out = _f(a, "output_dim", default=text_hidden)
    if "output_dim" in a:  # Qwen2.5-Omni: avg pool, ln_post and proj inside the encoder
        t.norm(f"{p}.ln_post", d)
        t.linear(f"{p}.proj", out, d)
    else:
        t.linear("multi_modal_projector.linear", text_hidden, d)


def estimate(t: _Tower, v: dict[str, Any], text_hidden: int) -> None:
    """A vision config of no known shape: depth x (4 d^2 + 2 d I) + patch embedding + a 2x2 patch-merger projector
    (biases, norms and position tables left out)."""
    depth = _f(v, "depth", "num_hidden_layers", "vt_num_hidden_layers", "layers")
    width = _f(v, "hidden_size", "embed_dim", "vt_hidden_size", "width")
    if not depth or not width:
        return
    inner = _f(v, "intermediate_size", "vt_intermediate_size", default=4 * width)
    patch, ch = _f(v, "patch_size", default=14), _f(v, "in_channels", "num_channels", default=3)
    temporal, merge = _f(v, "temporal_patch_size", default=1), _f(v, "spatial_merge_size", default=2)
    out = _f(v, "out_hidden_size", "text_hidden_size", default=text_hidden)
    t.other("visual.patch_embed", ch * patch * patch * temporal * width)
    t.linear("visual.blocks.attn", 4 * width, width, bias=False, count=depth)
    t.linear("visual.blocks.mlp", 2 * inner, width, bias=False, count=depth)
    t.linear("visual.merger.0", width * merge * merge, width * merge * merge, bias=False)
    t.linear("visual.merger.1", out, width * merge * merge, bias=False)


# ------------------------------------------------------------------------------------------ projectors
def llava_projector(t: _Tower, top: dict[str, Any], vision_width: int, text_hidden: int) -> None:
    """LLaVA's multi_modal_projector: linear_1 (vision -> text) + GELU + linear_2 (text -> text), biases per
    ``multimodal_projector_bias`` (default true); LLaVA-NeXT adds an ``image_newline`` vector."""
    bias = bool(top.get("multimodal_projector_bias", True))
    layers = top.get("vision_feature_layer")
    width = vision_width * (len(layers) if isinstance(layers, list) else 1)
    t.linear("multi_modal_projector.linear_1", text_hidden, width, bias=bias)
    t.linear("multi_modal_projector.linear_2", text_hidden, text_hidden, bias=bias)
    if str(top.get("model_type", "")).startswith(("llava_next", "llava_onevision")):
        t.other("image_newline", text_hidden)


# ------------------------------------------------------------------------------------------ dispatch
def _text_dims(text: Fields) -> tuple[int, int]:
    hidden = text.int("hidden_size")
    inner = text.raw("intermediate_size")
    return hidden, inner if isinstance(inner, int) and not isinstance(inner, bool) and inner > 0 else 4 * hidden


def _vision_reader(kind: str) -> Callable[..., int] | None:
    return {"clip_vision_model": clip, "siglip_vision_model": siglip, "siglip2_vision_model": siglip,
            "pixtral": pixtral, "intern_vit_6b": intern_vit, "internvl_vision": intern_vit}.get(kind)


def tower_tensors(top: Fields, text: Fields, model_type: str) -> tuple[list[Tensor], list[str]]:
    """The vision and audio towers of a multimodal config, with a note when a tower is estimated or named."""
    cfg = top.data
    outer = str(cfg.get("model_type") or model_type)
    hidden, inner = _text_dims(text)
    t, notes = _Tower(), []
    holder = cfg.get("thinker_config") if isinstance(cfg.get("thinker_config"), dict) else cfg
    v = next((holder[k] for k in ("vision_config", "vision_encoder_config") if isinstance(holder.get(k), dict)), None)
    if outer == "deepseek_vl_v2" and v is not None:
        notes += deepseek_vl2(t, cfg, hidden)
    elif outer == "cogvlm" and v is not None:
        eva_clip(t, v, hidden, inner)
    elif outer == "mllama" and v is not None:
        mllama_vision(t, v, hidden)
    elif outer in ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe", "qwen2_5_omni",
                   "qwen3_omni_moe") and v is not None or (v is not None and "spatial_merge_size" in v and "depth" in v):
        qwen_vl(t, v, hidden)
    elif v is not None and _vision_reader(str(v.get("model_type"))):
        kind = str(v.get("model_type"))
        if outer == "internvl_chat" or kind in ("intern_vit_6b", "internvl_vision"):
            width = intern_vit(t, v, "vision_model")
            scale = max(1, round(1 / _ratio(cfg.get("downsample_ratio"), 0.5))) ** 2
            t.norm("mlp1.0", width * scale)
            t.linear("mlp1.1", hidden, width * scale)
            t.linear("mlp1.3", hidden, hidden)
        elif outer == "gemma3":
            width = siglip(t, v, head=False)
            t.linear("multi_modal_projector.mm_input_projection", hidden, width, bias=False)
            t.norm("multi_modal_projector.mm_soft_emb_norm", width, bias=False)
        elif outer == "mistral3":
            width = pixtral(t, v)
            merge = _f(cfg, "spatial_merge_size", default=2)
            t.norm("multi_modal_projector.norm", width, bias=False)
            t.linear("multi_modal_projector.patch_merger.merging_layer", width, width * merge * merge, bias=False)
            llava_projector(t, {**cfg, "multimodal_projector_bias": cfg.get("multimodal_projector_bias", False)},
                            width, hidden)
        else:
            width = _vision_reader(kind)(t, v)  # type: ignore[misc]
            llava_projector(t, cfg, width, hidden)
    elif v is not None:
        estimate(t, v, hidden)
        if t.out:
            notes.append(f"vision tower estimated from vision_config (no known shape for "
                         f"{v.get('model_type') or 'this config'}: depth x (4 d^2 + 2 d I) + patch embedding + merger)")
    elif isinstance(cfg.get("vision_tower_cfg"), dict):  # VILA (llava_llama): SigLIP + mlp_downsample
        vt = cfg["vision_tower_cfg"]
        width = (siglip if "siglip" in str(vt.get("model_type")) else clip)(t, vt)
        kind = str(_dict(cfg.get("mm_projector_cfg")).get("mm_projector_type", "mlp2x_gelu"))
        if kind == "mlp_downsample":
            t.norm("mm_projector.layers.1", 4 * width)
            t.linear("mm_projector.layers.2", hidden, 4 * width)
            t.linear("mm_projector.layers.4", hidden, hidden)
        else:
            t.linear("mm_projector.layers.0", hidden, width)
            t.linear("mm_projector.layers.2", hidden, hidden)
    elif isinstance(cfg.get("img_processor"), dict):  # Phi-3-vision: a named CLIP + img_projection
        name = str(cfg["img_processor"].get("model_name", ""))
        shape = NAMED_TOWERS.get(name)
        if shape is not None:
            width = clip(t, shape, "model.vision_embed_tokens.img_processor.vision_model")
            dim = _f(cfg["img_processor"], "image_dim_out", default=width) * 4
            t.linear("model.vision_embed_tokens.img_projection.0", hidden, dim)
            t.linear("model.vision_embed_tokens.img_projection.2", hidden, hidden)
            t.other("model.vision_embed_tokens.glb_sub_GN", 2 * dim)
            notes.append(f"vision tower {name} (named by img_processor; shapes of that checkpoint's config)")
    elif model_type == "molmo":
        molmo_vision(t, hidden, inner)
        notes.append("Molmo vision backbone: a CLIP ViT-L/14-336 of 23 layers and its pooling/projector connector "
                     "(the modelling code's defaults; the config does not describe it)")
    a = holder.get("audio_config") if isinstance(holder.get("audio_config"), dict) else None
    if a is not None:
        audio = _Tower(Role.AUDIO)
        if _f(a, "encoder_layers", "d_model"):
            whisper_encoder(audio, a, hidden)
        else:
            notes.append("audio tower not counted (no Whisper-style encoder_layers / d_model in audio_config)")
        t.out += audio.out
    for role, kind, hint in ((Role.VISION, "vision", _vision_hint(cfg, holder)),
                             (Role.AUDIO, "audio", None if a is not None else _audio_hint(cfg))):
        if hint and not any(x.role == role for x in t.out):
            notes.append(f"{kind} tower not counted ({hint})")
    return t.out, notes


def _vision_hint(cfg: dict[str, Any], holder: dict[str, Any]) -> str | None:
    """Why a config that names an image encoder gave no vision tensors (None: it names none)."""
    embd = _dict(_dict(cfg.get("embd_layer")).get("image_embd_layer"))
    for key in ("vision_config", "vision_encoder_config"):
        if isinstance(holder.get(key), dict):
            return f"{key}: no depth or width the generic estimate can read"
    if embd:
        return "embd_layer.image_embd_layer: the image encoder is built by the model's own code, its shapes are " \
               "not in the config"
    if isinstance(cfg.get("img_processor"), dict):
        return f"img_processor.model_name {cfg['img_processor'].get('model_name')!r}: no known shapes for that name"
    for key in ("mm_vision_tower", "vision_tower"):
        if isinstance(cfg.get(key), str) and cfg[key]:
            return f"{key} {cfg[key]!r}: named only, no shapes in the config"
    return None


def _audio_hint(cfg: dict[str, Any]) -> str | None:
    """Why a config that names an audio encoder gave no audio tensors (None: it names none)."""
    if isinstance(cfg.get("audio_processor"), dict):
        return "audio_processor: a Conformer encoder the sizing rules do not model"
    if _dict(cfg.get("embd_layer")).get("audio_embd_layer"):
        return "embd_layer.audio_embd_layer: the audio encoder is built by the model's own code"
    return None


def molmo_vision(t: _Tower, text_hidden: int, text_inner: int) -> None:
    """Molmo's vision backbone (modeling_molmo.py defaults): a CLIP-style ViT-L/14-336 of 23 layers (patch linear
    without bias, class and position embeddings, pre-LayerNorm, biased attention and MLP), attention pooling over
    two concatenated layers (2 d -> d heads), a SwiGLU projector to the text width of half the fused MLP width, and a
    pad embedding."""
    p = "model.vision_backbone"
    shape = NAMED_TOWERS["molmo-vit"]
    d, i, n = shape["hidden_size"], shape["intermediate_size"], shape["num_hidden_layers"]
    patch, image = shape["patch_size"], shape["image_size"]
    t.other(f"{p}.image_vit.embeddings", d + ((image // patch) ** 2 + 1) * d)
    t.linear(f"{p}.image_vit.patch_embedding", d, 3 * patch * patch, bias=False)
    t.norm(f"{p}.image_vit.pre_ln", d)
    _vit_blocks(t, f"{p}.image_vit.transformer.resblocks", d, i, n)
    for name in ("wq", "wk", "wv"):
        t.linear(f"{p}.image_pooling_2d.{name}", d, 2 * d)
    t.linear(f"{p}.image_pooling_2d.wo", d, d)
    for name in ("w1", "w3"):
        t.linear(f"{p}.image_projector.{name}", text_inner, d, bias=False)
    t.linear(f"{p}.image_projector.w2", text_hidden, text_inner, bias=False)
    t.other(f"{p}.pad_embed", 2 * 2 * d)
