"""Weight formats: bits per element for every tensor group, never one global bits-per-weight.

GGUF block sizes are exact (llama.cpp ``ggml/src/ggml-common.h``); the named mixes follow llama.cpp's
``llama_tensor_get_type`` promotion rules (``src/llama-quant.cpp``) for the tensors we model. Non-GGUF formats
quantize linear weights only: embeddings, LM head, routers, norms and convolutions stay BF16, as the published
FP8/NVFP4/MXFP4/AWQ checkpoints do. The vision tower stays BF16 in every format (llama.cpp keeps it in a separate
mmproj file, vLLM leaves it unquantized). See ``docs/sizing.md`` for sources.
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from .architecture import Architecture, QuantScheme
from .batch import SCALAR, Ops
from .errors import UnknownFormatError, UnsupportedQuantization
from .layers import MoE
from .memo import model_memo
from .tensors import Role, Tensor

#: The rules as data (``data/format_bits.json``), read here and by the sizing grid (``pipeline/compute/grid_bytes``).
_DATA = json.loads((Path(__file__).parent / "data" / "format_bits.json").read_text())


def _scaled(entry: dict) -> float:
    """Bits of a value plus its scales' share: ``bits + scale_bits / elements`` for each scale, in order."""
    bits = float(entry["bits"])
    for scale_bits, elements in entry.get("scales", ()):
        bits = bits + scale_bits / elements
    return bits


#: ggml block types: (elements per block, bytes per block).
GGML_TYPES: dict[str, tuple[int, int]] = {k: (v[0], v[1]) for k, v in _DATA["ggml_types"].items()}
#: llama.cpp ``tensor_type_fallback``: used when a row length is not a multiple of the block size.
GGML_FALLBACK: dict[str, str] = dict(_DATA["ggml_fallback"])


def ggml_bpw(ggml_type: str) -> float:
    elements, nbytes = GGML_TYPES[ggml_type]
    return 8 * nbytes / elements


#: bits per element and elements per block of each ggml type
GGML_BPW = {k: ggml_bpw(k) for k in GGML_TYPES}
GGML_BLOCK = {k: v[0] for k, v in GGML_TYPES.items()}

#: GGUF mixes: base type per file type.
#: ``q4_0`` (the legacy 4.5-bit type llama-bench tables still use) sizes calibration cases only: it is not one of
#: the published WEIGHT_FORMATS.
GGUF_MIXES: dict[str, str] = dict(_DATA["gguf_mixes"])

#: Non-GGUF formats: bits per element of a quantized linear weight, with the scale overhead included.
#: fp8_block: 1 fp32 scale per 128x128 block; int8: W8 with one fp32 scale per output row (added per tensor);
#: nvfp4: FP4 E2M1 + one FP8 E4M3 scale per 16; mxfp4: FP4 + one E8M0 scale per 32;
#: awq_int4: 4-bit + fp16 scale + 4-bit zero per group of 128; int4: symmetric, fp16 scale per group.
LINEAR_BITS: dict[str, float] = {k: _scaled(v) for k, v in _DATA["linear_bits"].items()}

#: The format names the CLI and exports use (plus ``native``).
WEIGHT_FORMATS = ("bf16", "fp16", "fp8", "int8", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "iq4_xs", "q3_k_m", "q2_k",
                  "nvfp4", "mxfp4", "awq_int4")

@dataclass(frozen=True)
class _MixContext:
    n_layers: int
    attn_v_index: dict[int, int]  # layer -> position among layers with an attn_v-like tensor
    n_attn_v: int
    n_expert: int
    gqa_ratio: int
    seventy_b: bool
    tied: bool  # tied embeddings: token_embd doubles as output and gets output's type
    mxfp4_experts: bool = False  # routed experts stay MXFP4 in every mix (GGUF_KEEPS_MXFP4_EXPERTS)


def use_more_bits(i: Any, n: Any) -> Any:
    """llama.cpp ``use_more_bits``: first and last eighth of layers, and every third layer in between (numbers or
    columns: ``sizing_core.batch``)."""
    return (i < n // 8) | (i >= 7 * n // 8) | ((i - n // 8) % 3 == 2)


def mix_features(i: Any, n: Any, k: Any, n_attn_v: Any, n_expert: Any, gqa_ratio: Any) -> dict[str, Any]:
    """What llama.cpp's mix rules (``gguf_rules`` of ``data/format_bits.json``) ask of a tensor besides its role and
    the model flags (``tied``, ``mxfp4_experts``, ``seventy_b``): ``i`` its layer (0 outside layers) of ``n``, ``k``
    its layer's position among the ``n_attn_v`` layers with an attn_v-like tensor. Numbers or columns."""
    return {"eight_experts": n_expert == 8, "gqa4": gqa_ratio >= 4, "more_bits_layer": use_more_bits(i, n),
            "first_sixteenth": i < n // 16, "first_eighth": i < n // 8,
            "more_bits_attn_v": use_more_bits(k, n_attn_v), "first_two_attn_v": k < 2}


#: Model types whose GGUF files keep the checkpoint's MXFP4 routed experts in every mix: llama.cpp's converter
#: writes gpt-oss's MXFP4 expert blocks as they are (no dequantization, ggml-org/llama.cpp#16756) and the quantizer
#: leaves them, so a "Q8_0" or "Q4_K_M" file changes only the other ~10% of the weights. Published sizes agree:
#: unsloth/gpt-oss-20b-GGUF Q8_0 is 12,109,567,168 bytes and Q4_K_M 11,624,759,488 (revision d449b42), where
#: all-Q8_0 experts would be ~22 GB; bartowski's README: "All quants keep the feed forward networks at mxfp4".
#: Not generalized to every MXFP4 checkpoint: DeepSeek-V4 GGUFs (forks only) requantize experts in some files.
GGUF_KEEPS_MXFP4_EXPERTS = frozenset({"gpt_oss"})


def _native_mxfp4_experts(arch: Architecture) -> bool:
    native = arch.native
    return (arch.model_type in GGUF_KEEPS_MXFP4_EXPERTS and not native.unsupported
            and (native.expert_format or native.weight_format) == "mxfp4")


def mix_context(arch: Architecture) -> _MixContext:
    attn = arch.attention_layers()
    experts, ratio = 0, 1
    for layer in arch.layers:
        if isinstance(layer.mlp, MoE):
            experts = layer.mlp.num_experts
        m = layer.mixer
        if m is not None and hasattr(m, "num_kv_heads"):
            ratio = max(ratio, m.num_heads // m.num_kv_heads)
    return _MixContext(arch.num_layers, {layer: k for k, layer in enumerate(attn)}, len(attn), experts, ratio,
                       arch.num_layers == 80 and ratio == 8, arch.tie_word_embeddings, _native_mxfp4_experts(arch))


Choice = str | tuple[str, "Choice", "Choice"]  # a ggml type, or (feature, if it holds, if not)


@dataclass(frozen=True)
class GgufRule:
    """One rule of ``data/format_bits.json``'s ``gguf_rules`` for one mix: tensors of ``roles`` (None: any) where
    feature ``when`` holds (None: always) get ``choice``; ``promote`` = (feature, types, to)."""

    roles: frozenset[str] | None
    when: str | None
    choice: Choice
    promote: tuple[str, frozenset[str], str] | None


def _resolve(choice: Any, mix: str) -> Choice:
    if isinstance(choice, str):
        return GGUF_MIXES[mix] if choice == "base" else choice
    if "if" in choice:
        return (choice["if"], _resolve(choice["then"], mix), _resolve(choice["else"], mix))
    return _resolve(choice.get(mix, "base"), mix)


@cache
def gguf_rules(mix: str) -> tuple[GgufRule, ...]:
    """The rules that apply in ``mix``, in order (the first that matches a tensor decides its type)."""
    rules = []
    for raw in _DATA["gguf_rules"]:
        if "mixes" in raw and mix not in raw["mixes"]:
            continue
        promote = raw.get("promote")
        rules.append(GgufRule(frozenset(raw["roles"]) if "roles" in raw else None, raw.get("if"),
                              _resolve(raw["type"], mix),
                              (promote["if"], frozenset(promote["types"]), promote["to"]) if promote else None))
    return tuple(rules)


def _choose(choice: Choice, flag: Any, ops: Ops) -> Any:
    if isinstance(choice, str):
        return ops.const(choice)
    feature, then, otherwise = choice
    return ops.where(flag(feature), _choose(then, flag, ops), _choose(otherwise, flag, ops))


def gguf_rule_type(mix: str, role: Any, flag: Any, ops: Ops = SCALAR) -> Any:
    """The ggml type of a tensor of ``role`` in file type ``mix``, before the row-length fallback: ``flag(name)``
    answers the features of :func:`mix_features` and the model flags. Numbers or columns (``sizing_core.batch``)."""
    cases = []
    for rule in gguf_rules(mix):
        cond = True if rule.roles is None else ops.is_in(role, rule.roles)
        if rule.when is not None:
            cond = cond & flag(rule.when)
        kind = _choose(rule.choice, flag, ops)
        if rule.promote is not None:
            feature, types, to = rule.promote
            kind = ops.where(flag(feature) & ops.is_in(kind, types), ops.const(to), kind)
        cases.append((cond, kind))
        if cond is True:
            break
    return ops.first(cases, ops.const(GGUF_MIXES[mix]))


def gguf_row_type(kind: Any, cols: Any, ops: Ops = SCALAR) -> Any:
    """llama.cpp's ``tensor_type_fallback``: ``kind``, or its fallback when a row of ``cols`` elements is not a
    whole number of its blocks, or F16 when the fallback's blocks do not fit either. Numbers or columns."""
    fallback = ops.lookup(kind, GGML_FALLBACK, None)
    misfit = (cols % ops.lookup(kind, GGML_BLOCK) != 0) & ops.not_null(fallback)
    fallback_kind = ops.where(cols % ops.lookup(fallback, GGML_BLOCK, 1) != 0, ops.const("F16"), fallback)
    return ops.where(misfit, fallback_kind, kind)


def _flags(i: int, ctx: _MixContext) -> tuple[tuple[str, bool], ...]:
    """The model flags and :func:`mix_features` of a tensor of layer ``i`` (0 outside layers)."""
    return _flags_of(ctx.tied, ctx.mxfp4_experts, ctx.seventy_b, i, ctx.n_layers, ctx.attn_v_index.get(i, 0),
                     ctx.n_attn_v, ctx.n_expert, ctx.gqa_ratio)


@lru_cache(maxsize=1 << 16)
def _flags_of(tied: bool, mxfp4_experts: bool, seventy_b: bool,
              *layer: int) -> tuple[tuple[str, bool], ...]:
    return (("tied", tied), ("mxfp4_experts", mxfp4_experts), ("seventy_b", seventy_b),
            *mix_features(*layer).items())


@lru_cache(maxsize=1 << 14)
def _rule_type(mix: str, role: str, flags: tuple[tuple[str, bool], ...]) -> str:
    """:func:`gguf_rule_type` on numbers, memoised: a model has few distinct (role, flags) and many tensors."""
    return gguf_rule_type(mix, role, dict(flags).__getitem__)


@lru_cache(maxsize=1 << 14)
def _row_bits(kind: str, cols: int) -> float:
    return GGML_BPW[gguf_row_type(kind, cols)]


def gguf_type(mix: str, t: Tensor, ctx: _MixContext) -> str:
    """The ggml type llama.cpp gives tensor ``t`` in file type ``mix`` (before the row-length fallback)."""
    return _rule_type(mix, t.role, _flags(t.layer or 0, ctx))


def _gguf_bits_all(mix: str, tensors: tuple[Tensor, ...], ctx: _MixContext) -> list[float]:
    flags: dict[int, tuple[tuple[str, bool], ...]] = {}
    out = []
    for t in tensors:
        i = t.layer or 0
        f = flags.get(i)
        if f is None:
            f = flags[i] = _flags(i, ctx)
        out.append(_row_bits(_rule_type(mix, t.role, f), t.cols))
    return out


@lru_cache(maxsize=4096)
def _pattern(pattern: str) -> re.Pattern[str]:
    """Exclusion patterns as configs write them: ``re:<regex>`` or a glob; multimodal prefixes normalised."""
    if pattern.startswith("re:"):
        return re.compile(pattern[3:])
    return re.compile(fnmatch.translate(_normalise(pattern)))


def _normalise(name: str) -> str:
    for prefix in ("model.language_model.", "language_model.model.", "language_model."):
        if name.startswith(prefix):
            return "model." + name[len(prefix):]
    return name


@lru_cache(maxsize=1 << 16)
def is_excluded(name: str, patterns: tuple[str, ...]) -> bool:
    """True when ``name`` or one of its parent modules matches a pattern (``model.layers.*.self_attn`` keeps
    ``model.layers.3.self_attn.q_proj`` unquantized; ``model.layers.0.mlp.gate`` does not match ``gate_proj``).

    Memoized (a pure function of its arguments): every non-GGUF format and every copy of a model asks again for the
    same tensor names, and the pattern matching was most of ``tensor_bits`` (graph's 200 x 60 profile)."""
    parts = name.split(".")
    prefixes = [".".join(parts[:k]) for k in range(1, len(parts) + 1)]
    for raw in patterns:
        pat = _pattern(raw)
        if raw.startswith("re:"):
            if pat.fullmatch(name) or pat.match(name):
                return True
        elif any(pat.fullmatch(p) for p in prefixes):
            return True
    return False


_BNB_4BIT: dict[str, float] = {k: _scaled(v) for k, v in _DATA["bnb_4bit"].items()}
_WIDTH = re.compile(r"(gptq|mlx|awq)_int(\d)$|int(\d)_group$")


def linear_bits(fmt: str, group: int | None, rows: Any, cols: Any, unquantized: Any) -> Any:
    """Bits per element of a ``rows`` x ``cols`` linear weight stored in ``fmt`` with its scales (``group`` None:
    one per row). Numbers or columns (``sizing_core.batch``): the grid passes its row and column lengths."""
    if fmt in ("bf16", "fp16", "fp32"):
        return unquantized
    if fmt == "int4":  # compressed-tensors symmetric int4: a 16-bit scale per group
        return 4.0 + 16 / (group or 128)
    if fmt == "int4_channel":
        return 4.0 + 16 / cols
    if fmt in ("int8", "bnb_int8", "fp8_channel"):  # a float32 scale per output row
        return 8.0 + 32 / cols
    if fmt in _BNB_4BIT:
        return _BNB_4BIT[fmt]
    m = _WIDTH.match(fmt)
    if m is not None:
        kind, bits = (m.group(1), int(m.group(2))) if m.group(1) else ("int", int(m.group(3)))
        g = group or cols
        if kind == "gptq":  # packed values, a 16-bit scale and a b-bit zero per group, an int32 g_idx per input
            return bits + (16 + bits) / g + 32 / rows
        if kind == "awq":  # AWQ: a 16-bit scale and a 4-bit zero per group (of 128 unless the config says)
            return bits + (16 + bits) / (group or 128)
        if kind == "mlx":  # MLX affine: a 16-bit scale and a 16-bit bias per group
            return bits + 32 / g
        return bits + 16 / g
    return LINEAR_BITS[fmt]


def _format_bits(fmt: str, group: int | None, t: Tensor, unquantized: float) -> float:
    return linear_bits(fmt, group, t.rows, t.cols, unquantized)


_EXPERT_INDEX = re.compile(r"\.experts\.\d+(?=\.|$)")


#: mlx-lm's module names for a MoE block's parts, read as ours: the block (Mixtral's ``block_sparse_moe``), its
#: routed experts (one ``switch_mlp`` of ``SwitchGLU``: mlx_lm/models/switch_layers.py) and its router where a
#: model names it ``router`` (gpt-oss ``mlp.router``; GraniteMoE ``router.layer``; others ``router.proj`` or
#: ``router.gate``), which our tensors call ``mlp.gate``
_MLX_NAMES = ((re.compile(r"\.block_sparse_moe(?=\.|$)"), ".mlp"), (re.compile(r"\.switch_mlp(?=\.|$)"), ".experts"),
              (re.compile(r"\.mlp\.router(?:\.(?:layer|proj|gate))?$"), ".mlp.gate"))


def module_key(path: str) -> str:
    """A checkpoint's module path (``quantized_layers``, MLX per-module entries) in our tensor naming:
    language-model prefixes folded, expert indices dropped, mlx-lm's MoE names read as ours (:data:`_MLX_NAMES`)."""
    path = _normalise(path)
    if path.startswith("backbone."):
        path = "model." + path[len("backbone."):]
    path = _EXPERT_INDEX.sub(".experts", path)
    for pattern, ours in _MLX_NAMES:
        path = pattern.sub(ours, path)
    return path.replace(".shared_expert.", ".shared_experts.")


@lru_cache(maxsize=64)
def _per_module_index(per_module: tuple[tuple[str, str, int | None], ...]) -> dict[str, tuple[str, int | None]]:
    return {module_key(path): (fmt, group) for path, fmt, group in per_module}


def _per_module_format(scheme: QuantScheme, name: str) -> tuple[str, int | None] | None:
    index = _per_module_index(scheme.per_module)
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        hit = index.get(".".join(parts[:k]))
        if hit is not None:
            return hit
    return None


def _targeted_format(scheme: QuantScheme, name: str) -> tuple[str, int | None] | None:
    """compressed-tensors: the first config group whose targets match ``name`` ("Linear", a regex, a module)."""
    for targets, fmt, group in scheme.targeted:
        if "Linear" in targets or is_excluded(name, tuple(t for t in targets if t != "Linear")):
            return fmt, group
    return None


def _scheme_bits(scheme: QuantScheme, t: Tensor, unquantized: float) -> float:
    if t.is_tower and not (scheme.towers and t.cols > 1):
        return unquantized  # towers keep the checkpoint dtype unless the scheme converts every linear layer
    if scheme.overrides and t.cols > 1:  # MLX: a module the checkpoint names has its own bits
        hit = _per_module_index(scheme.overrides).get(module_key(t.name))
        if hit is not None:
            return _format_bits(hit[0], hit[1], t, unquantized)
    embedding = scheme.embeddings and t.role in (Role.TOKEN_EMBD, Role.OUTPUT) and t.cols % (scheme.group_size or 1) == 0
    if not (t.is_linear or t.is_tower or embedding) or is_excluded(t.name, scheme.exclude):
        return unquantized
    if scheme.per_module:  # MIXED_PRECISION: a listed module has its own format, the rest stays unquantized
        hit = _per_module_format(scheme, t.name)
        return unquantized if hit is None else _format_bits(hit[0], hit[1], t, unquantized)
    if scheme.targeted:
        hit = _targeted_format(scheme, t.name)
        return unquantized if hit is None else _format_bits(hit[0], hit[1], t, unquantized)
    if scheme.experts_only and not t.is_routed_expert:
        return unquantized
    fmt = scheme.expert_format if (t.is_routed_expert and scheme.expert_format) else scheme.weight_format
    return _format_bits(fmt, scheme.group_size, t, unquantized)


#: What each non-GGUF target format leaves in BF16 besides non-linear tensors: the LM head always.
_DEFAULT_EXCLUDE = ("lm_head",)


def format_scheme(fmt: str) -> QuantScheme:
    """The scheme a non-GGUF format applies when quantizing a BF16 checkpoint ourselves."""
    return QuantScheme(source="format", weight_format=fmt, exclude=_DEFAULT_EXCLUDE)


_BITS_CACHE: dict[tuple[int, str], tuple[Architecture, tuple[float, ...]]] = model_memo()


def tensor_bits(arch: Architecture, fmt: str, tensors: tuple[Tensor, ...] | None = None) -> list[float]:
    """Bits per element for each tensor of ``arch`` in ``fmt`` (a name of WEIGHT_FORMATS or ``native``).

    The whole-model answer is cached (setups and exports ask for the same model and format once per
    priced setup), keyed by object identity with the object kept so an id is never reused while cached."""
    if tensors is not None:
        return _tensor_bits(arch, fmt, tensors)
    key = (id(arch), fmt)
    hit = _BITS_CACHE.get(key)
    if hit is None or hit[0] is not arch:
        if len(_BITS_CACHE) > 4096:
            _BITS_CACHE.clear()
        hit = _BITS_CACHE[key] = (arch, tuple(_tensor_bits(arch, fmt, arch.tensors)))
    return list(hit[1])


def checkpoint_format(arch: Architecture) -> str | None:
    """The format of :data:`WEIGHT_FORMATS` a quantized checkpoint is stored in (its routed experts' when only
    they are quantized, as gpt-oss ships MXFP4), or None: a 16-bit checkpoint, an unknown scheme, or one no format
    name stands for. Asking such a checkpoint for its own format is asking for the checkpoint: nobody quantizes
    the BF16 parts of an MXFP4 release to MXFP4 again, so that format's bits are the native ones."""
    native = arch.native
    own = native.expert_format or native.weight_format
    if native.unsupported or own in ("bf16", "fp16", "fp32") or own not in WEIGHT_FORMATS:
        return None
    return own


def _tensor_bits(arch: Architecture, fmt: str, tensors: tuple[Tensor, ...]) -> list[float]:
    unquantized = arch.dtype_bytes * 8
    if fmt != "native" and fmt == checkpoint_format(arch):
        fmt = "native"
    if fmt in GGUF_MIXES:
        return _gguf_bits_all(fmt, tensors, mix_context(arch))
    if fmt == "native":
        scheme = arch.native
        if scheme.unsupported:
            raise UnsupportedQuantization(f"{arch.model}: native weights unknown ({scheme.unsupported})")
        if scheme.weight_format in ("bf16", "fp16", "fp32"):
            return [LINEAR_BITS[scheme.weight_format]] * len(tensors)
        return [_scheme_bits(scheme, t, unquantized) for t in tensors]
    if fmt in ("bf16", "fp16"):
        return [16.0] * len(tensors)
    if fmt not in LINEAR_BITS:
        raise UnknownFormatError(f"unknown weight format {fmt!r} (known: {', '.join(WEIGHT_FORMATS)}, native)")
    scheme = format_scheme(fmt)
    return [16.0 if t.is_tower else _scheme_bits(scheme, t, 16.0) for t in tensors]


def weight_bytes(arch: Architecture, fmt: str) -> float:
    return sum(t.numel * b / 8 for t, b in zip(arch.tensors, tensor_bits(arch, fmt), strict=True))
