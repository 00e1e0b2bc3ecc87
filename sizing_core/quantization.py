"""Read a checkpoint's own storage format from ``quantization_config`` or a ModelOpt ``hf_quant_config.json``.

The result is a :class:`QuantScheme` naming one of our weight formats (see ``formats.py``) plus the modules the
checkpoint keeps in BF16. Formats we cannot map raise a :class:`ConfigError` naming the field: a silently wrong
native size would be worse than none. ``config.reader.parse_config`` catches it and records the scheme as
unsupported (native weights ``null`` with the reason), so BF16, the other formats and the KV cache still size.
"""

from __future__ import annotations

import re
from typing import Any

from .architecture import QuantScheme
from .errors import ConfigError

_TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "half": "fp16"}


def _names(model: str, q: dict[str, Any], key: str, where: str = "quantization_config") -> tuple[str, ...]:
    """A list of module names or patterns (``ignore``, ``modules_to_not_convert``, ...), checked."""
    value = q.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(model, f"{where}.{key}", "must be a list of module names")
    return tuple(value)


def _substrings(names: tuple[str, ...]) -> tuple[str, ...]:
    """AWQ's ``modules_to_not_convert`` as the loaders read it: a module stays unquantized when a name is a
    substring of its path (vLLM's ``is_layer_skipped_awq``: ``any(name in prefix ...)``; transformers and
    llm-compressor's AWQ converter, ``re:.*<name>.*``), so ``"indexer"`` keeps every layer's indexer and
    ``"model.layers.0."`` the whole first layer. As patterns of :func:`~sizing_core.formats.is_excluded`."""
    return tuple(f"re:.*{re.escape(n)}.*" for n in names)


def _mlx_modules(model: str, qc: dict[str, Any]) -> tuple[tuple[tuple[str, str, int], ...], tuple[str, ...]]:
    """mlx-lm's per-module entries beside ``bits`` and ``group_size`` (what its ``quant_predicate`` decided
    at conversion): a module path mapped to ``{"bits", "group_size"}`` has those, one mapped to ``false`` stayed
    unquantized. Returns (overrides, unquantized modules: in our tensor naming, as the overrides are looked up)."""
    from .formats import module_key

    overrides, kept = [], []
    for key, value in qc.items():
        if key in ("bits", "group_size", "mode"):
            continue
        if value is False:
            kept.append(module_key(key))
        elif isinstance(value, dict):
            bits = _bits(model, value, f"{key}.bits", (2, 3, 4, 5, 6, 8))
            overrides.append((key, f"mlx_int{bits}", _group(value if "group_size" in value else qc) or 64))
    return tuple(overrides), tuple(kept)


def unquantized_scheme(dtype: str | None) -> QuantScheme:
    fmt = _TORCH_DTYPES.get((dtype or "bfloat16").lower(), "bf16")
    return QuantScheme(source="torch_dtype", weight_format=fmt)


#: ModelOpt algorithm names (whole checkpoint or one entry of MIXED_PRECISION ``quantized_layers``) -> our format.
_MODELOPT_FORMATS = {
    "FP8": "fp8", "FP8_PER_CHANNEL_PER_TOKEN": "fp8", "FP8_BLOCK_SCALES": "fp8_block", "FP8_PB_WO": "fp8_block",
    "NVFP4": "nvfp4", "W4A16_NVFP4": "nvfp4", "W4A8_NVFP4_FP8": "nvfp4", "NVFP4_AWQ": "nvfp4",
    "MXFP4": "mxfp4", "W4A8_MXFP4_FP8": "mxfp4", "W4A16_MXFP4": "mxfp4",
    "W4A16_AWQ": "int4", "W4A8_AWQ": "int4", "INT4_AWQ": "int4",
    "INT8": "int8", "W8A8_SQ_PER_CHANNEL": "int8", "INT8_SQ": "int8",
    "UNQUANTIZED": "bf16", "NONE": "bf16",
}
_DEFAULT_GROUP = {"nvfp4": 16, "mxfp4": 32, "int4": 128}


def _modelopt_format(model: str, algo: str, field: str) -> str:
    fmt = _MODELOPT_FORMATS.get(algo.upper())
    if fmt is None:
        raise ConfigError(model, field, f"unsupported ModelOpt algorithm {algo!r}")
    return fmt


def _mixed_precision(model: str, q: dict[str, Any], source: str, kv: str | None) -> QuantScheme:
    """ModelOpt MIXED_PRECISION: ``quantized_layers`` maps module paths to their own algorithm."""
    layers = q.get("quantized_layers")
    if not isinstance(layers, dict) or not layers:
        raise ConfigError(model, "quantization.quantized_layers", "MIXED_PRECISION without a per-layer map")
    per_module = []
    for module, entry in layers.items():
        algo = entry.get("quant_algo") if isinstance(entry, dict) else entry
        fmt = _modelopt_format(model, str(algo or ""), f"quantization.quantized_layers.{module}.quant_algo")
        group = entry.get("group_size") if isinstance(entry, dict) else None
        per_module.append((str(module), fmt, int(group) if group else _DEFAULT_GROUP.get(fmt)))
    formats = {fmt for _, fmt, _ in per_module if fmt != "bf16"}
    main = max(formats, key=lambda f: sum(1 for _, g, _ in per_module if g == f)) if formats else "bf16"
    return QuantScheme(source=source, weight_format="mixed", expert_format=None, per_module=tuple(per_module),
                       exclude=_names(model, q, "exclude_modules", "quantization"), kv_cache_dtype=kv and kv.lower(),
                       group_size=_DEFAULT_GROUP.get(main))


def _modelopt(model: str, q: dict[str, Any], source: str) -> QuantScheme:
    algo = str(q.get("quant_algo", "")).upper()
    kv = q.get("kv_cache_quant_algo") if isinstance(q.get("kv_cache_quant_algo"), str) else None
    exclude = _names(model, q, "exclude_modules", "quantization")
    towers = not _keeps_towers(exclude)  # ModelOpt converts every linear layer outside exclude_modules
    if algo == "FP8":
        return QuantScheme(source=source, weight_format="fp8", exclude=exclude, kv_cache_dtype=kv and kv.lower(),
                           towers=towers)
    if algo == "NVFP4":
        return QuantScheme(source=source, weight_format="nvfp4", group_size=int(q.get("group_size", 16)),
                           exclude=exclude, kv_cache_dtype=kv and kv.lower(), towers=towers)
    if algo == "MIXED_PRECISION":
        return _mixed_precision(model, q, source, kv)
    fmt = _modelopt_format(model, algo, "quantization.quant_algo")
    return QuantScheme(source=source, weight_format=fmt, group_size=q.get("group_size") or _DEFAULT_GROUP.get(fmt),
                       exclude=exclude, kv_cache_dtype=kv and kv.lower(), towers=towers)


#: Words of a tower module name: an exclusion list naming one keeps the towers in the checkpoint dtype.
_TOWER_WORDS = re.compile(r"vision|visual|image|img|mm_projector|multi_modal|audio|siglip|vit\b|clip", re.I)


def _keeps_towers(exclude: tuple[str, ...]) -> bool:
    return any(_TOWER_WORDS.search(p) for p in exclude)


def _ct_format(model: str, weights: dict[str, Any], field: str) -> tuple[str, int | None]:
    """One compressed-tensors weight spec as (our format, group size): bits, int/float, strategy, group size."""
    bits, kind, group = weights.get("num_bits"), weights.get("type"), weights.get("group_size")
    strategy = str(weights.get("strategy") or ("group" if group else "tensor"))
    if bits == 4 and kind == "float" and group == 16:
        return "nvfp4", 16
    if bits == 4 and kind == "float" and group == 32:  # compressed-tensors MXFP4: FP4 E2M1 + E8M0 scale per 32
        return "mxfp4", 32
    if bits in (2, 3, 4, 8) and kind == "int" and strategy == "group" and group:
        return ("int4" if bits == 4 else f"int{bits}_group"), int(group)
    if bits == 4 and kind == "int":  # channel-wise int4: one scale per output row
        return "int4_channel", None
    if bits == 8 and kind == "float":
        block = weights.get("block_structure")
        if strategy == "block" and block:
            return "fp8_block", None
        return ("fp8_channel" if strategy == "channel" else "fp8"), None
    if bits == 8 and kind == "int":
        return "int8", None
    raise ConfigError(model, field, f"unsupported compressed-tensors weights {bits}-bit {kind} strategy {strategy} "
                                    f"group {group}")


def _compressed_tensors(model: str, qc: dict[str, Any]) -> QuantScheme:
    """compressed-tensors: each of ``config_groups`` quantizes the linear layers its ``targets`` name ("Linear" =
    all, ``re:`` expressions, module names) in its own format; ``ignore`` keeps modules in the checkpoint dtype."""
    groups = qc.get("config_groups") or {}
    if not isinstance(groups, dict) or not groups:
        raise ConfigError(model, "quantization_config.config_groups", "compressed-tensors config without groups")
    targeted = []
    for name, group in groups.items():
        if not isinstance(group, dict) or not isinstance(group.get("weights"), dict):
            raise ConfigError(model, f"quantization_config.config_groups.{name}.weights", "is missing")
        fmt, size = _ct_format(model, group["weights"], f"quantization_config.config_groups.{name}.weights")
        targets = tuple(str(t) for t in (group.get("targets") or ["Linear"]))
        targeted.append((targets, fmt, size))
    exclude = _names(model, qc, "ignore")
    main = targeted[0]
    return QuantScheme(source="quantization_config", weight_format=main[1] if len(targeted) == 1 else "mixed",
                       group_size=main[2], exclude=exclude, targeted=tuple(targeted) if len(targeted) > 1 else (),
                       towers=not _keeps_towers(exclude))


def _bitsandbytes(model: str, qc: dict[str, Any]) -> QuantScheme:
    """bitsandbytes: 4-bit NF4/FP4 in blocks of 64 with a float32 absmax (double quantization: an 8-bit absmax and
    a float32 per 256 of them), or LLM.int8 (int8 and a float32 scale per output row). Every linear layer but
    ``llm_int8_skip_modules`` (and the LM head) is converted, a vision tower's too."""
    exclude = _names(model, qc, "llm_int8_skip_modules")
    if qc.get("load_in_4bit") or qc.get("_load_in_4bit"):
        kind = str(qc.get("bnb_4bit_quant_type", "fp4")).lower()
        if kind not in ("nf4", "fp4"):
            raise ConfigError(model, "quantization_config.bnb_4bit_quant_type", f"unknown 4-bit type {kind!r}")
        fmt = f"bnb_{kind}" + ("_dq" if qc.get("bnb_4bit_use_double_quant") else "")
        return QuantScheme(source="quantization_config", weight_format=fmt, group_size=64, exclude=exclude,
                           towers=not _keeps_towers(exclude))
    if qc.get("load_in_8bit") or qc.get("_load_in_8bit"):
        return QuantScheme(source="quantization_config", weight_format="bnb_int8", exclude=exclude,
                           towers=not _keeps_towers(exclude))
    raise ConfigError(model, "quantization_config.load_in_4bit", "bitsandbytes config with neither 4-bit nor 8-bit")


def _bits(model: str, qc: dict[str, Any], field: str, allowed: tuple[int, ...]) -> int:
    bits = qc.get("bits", qc.get("w_bit", 4))
    if isinstance(bits, bool) or bits not in allowed:
        raise ConfigError(model, f"quantization_config.{field}", f"unsupported bit width {bits!r}")
    return int(bits)


def _group(qc: dict[str, Any]) -> int | None:
    """GPTQ/AWQ/MLX group size; -1 (GPTQ) means one group per row (the scale is per output channel)."""
    group = qc.get("group_size", qc.get("q_group_size", 128))
    if isinstance(group, bool) or not isinstance(group, int) or group == 0 or group < -1:
        return 128
    return None if group == -1 else group


def native_scheme(model: str, config: dict[str, Any], hf_quant: dict[str, Any] | None, dtype: str | None,
                  expert_dtype: str | None = None) -> QuantScheme:
    """The checkpoint's storage format: sidecar ``hf_quant_config.json`` first, then ``quantization_config``."""
    if hf_quant is not None:
        q = hf_quant.get("quantization")
        if not isinstance(q, dict):
            raise ConfigError(model, "hf_quant_config.quantization", "missing or not an object")
        return _modelopt(model, q, "hf_quant_config.json")
    qc = config.get("quantization_config")
    if qc is None and isinstance(config.get("quantization"), dict) and "bits" in config["quantization"]:
        qc = config["quantization"]  # MLX conversions may carry only "quantization" {bits, group_size}
    if qc is None:
        return unquantized_scheme(dtype)
    if not isinstance(qc, dict):
        raise ConfigError(model, "quantization_config", "not an object")
    method = str(qc.get("quant_method", "")).lower()
    if method == "fp8":
        block = qc.get("weight_block_size")
        if block is not None and (not isinstance(block, list) or len(block) != 2
                                  or not all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block)):
            raise ConfigError(model, "quantization_config.weight_block_size", f"must be two positive integers, "
                                                                             f"got {block!r}")
        exclude = _names(model, qc, "modules_to_not_convert")
        return QuantScheme(
            source="quantization_config",
            weight_format="fp8_block" if block else "fp8",
            expert_format="mxfp4" if str(expert_dtype or "").lower() == "fp4" else None,
            block_size=tuple(block) if block else None,
            exclude=exclude, towers=not _keeps_towers(exclude),
        )
    if method == "mxfp4":
        return QuantScheme(source="quantization_config", weight_format="mxfp4", group_size=32,
                           exclude=_names(model, qc, "modules_to_not_convert"), experts_only=True)
    if method == "compressed-tensors":
        return _compressed_tensors(model, qc)
    if method == "modelopt":
        if str(qc.get("quant_algo", "")).upper() == "MIXED_PRECISION" and not qc.get("quantized_layers") \
                and hf_quant is None:
            raise ConfigError(model, "quantization_config.quantized_layers",
                              "MIXED_PRECISION without the per-layer map (it is in hf_quant_config.json)")
        return _modelopt(model, qc, "quantization_config")
    if method == "awq":
        bits = _bits(model, qc, "bits", (4,))
        return QuantScheme(source="quantization_config", weight_format=f"awq_int{bits}", group_size=_group(qc),
                           exclude=_substrings(_names(model, qc, "modules_to_not_convert")))
    if method == "gptq":  # GPTQ 2/3/4/8-bit: packed weights, a scale and zero per group, g_idx per input channel
        bits = _bits(model, qc, "bits", (2, 3, 4, 8))
        return QuantScheme(source="quantization_config", weight_format=f"gptq_int{bits}", group_size=_group(qc),
                           exclude=_names(model, qc, "modules_to_not_convert"))
    if method == "bitsandbytes":
        return _bitsandbytes(model, qc)
    if method == "fbgemm_fp8":  # FP8 weights with a float32 scale per output row; modules_to_not_convert stay BF16
        exclude = _names(model, qc, "modules_to_not_convert")
        return QuantScheme(source="quantization_config", weight_format="fp8_channel", exclude=exclude,
                           towers=not _keeps_towers(exclude))
    if method == "eetq":  # int8 weight-only with a scale per output row
        return QuantScheme(source="quantization_config", weight_format="int8",
                           exclude=_names(model, qc, "modules_to_not_convert"))
    if not method and isinstance(qc.get("bits"), int) and "group_size" in qc:  # MLX: no quant_method
        bits = _bits(model, qc, "bits", (2, 3, 4, 5, 6, 8))
        overrides, kept = _mlx_modules(model, qc)
        return QuantScheme(source="quantization_config", weight_format=f"mlx_int{bits}", group_size=_group(qc) or 64,
                           embeddings=True, overrides=overrides, exclude=kept)
    raise ConfigError(model, "quantization_config.quant_method", f"unsupported quantization method {method!r}")
