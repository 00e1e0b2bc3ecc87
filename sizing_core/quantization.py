"""Read a checkpoint's own storage format from ``quantization_config`` or a ModelOpt ``hf_quant_config.json``.

The result is a :class:`QuantScheme` naming one of our weight formats (see ``formats.py``) plus the modules the
checkpoint keeps in BF16. Formats we cannot map raise a :class:`ConfigError` naming the field: a silently wrong
native size would be worse than none. ``hf_config.parse_config`` catches it and records the scheme as
unsupported (native weights ``null`` with the reason), so BF16, the other formats and the KV cache still size.
"""

from __future__ import annotations

from typing import Any

from .architecture import QuantScheme
from .errors import ConfigError

_TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "half": "fp16"}


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
                       exclude=tuple(q.get("exclude_modules") or ()), kv_cache_dtype=kv and kv.lower(),
                       group_size=_DEFAULT_GROUP.get(main))


def _modelopt(model: str, q: dict[str, Any], source: str) -> QuantScheme:
    algo = str(q.get("quant_algo", "")).upper()
    kv = q.get("kv_cache_quant_algo")
    exclude = tuple(q.get("exclude_modules") or ())
    if algo == "FP8":
        return QuantScheme(source=source, weight_format="fp8", exclude=exclude, kv_cache_dtype=kv and kv.lower())
    if algo == "NVFP4":
        return QuantScheme(source=source, weight_format="nvfp4", group_size=int(q.get("group_size", 16)),
                           exclude=exclude, kv_cache_dtype=kv and kv.lower())
    if algo == "MIXED_PRECISION":
        return _mixed_precision(model, q, source, kv)
    fmt = _modelopt_format(model, algo, "quantization.quant_algo")
    return QuantScheme(source=source, weight_format=fmt, group_size=q.get("group_size") or _DEFAULT_GROUP.get(fmt),
                       exclude=exclude, kv_cache_dtype=kv and kv.lower())


def _compressed_tensors(model: str, qc: dict[str, Any]) -> QuantScheme:
    groups = qc.get("config_groups") or {}
    if not groups:
        raise ConfigError(model, "quantization_config.config_groups", "compressed-tensors config without groups")
    weights = next(iter(groups.values())).get("weights") or {}
    bits, kind, group = weights.get("num_bits"), weights.get("type"), weights.get("group_size")
    exclude = tuple(qc.get("ignore") or ())
    if bits == 4 and kind == "float" and group == 16:
        return QuantScheme(source="quantization_config", weight_format="nvfp4", group_size=16, exclude=exclude)
    if bits == 4 and kind == "float" and group == 32:  # compressed-tensors MXFP4: FP4 E2M1 + E8M0 scale per 32
        return QuantScheme(source="quantization_config", weight_format="mxfp4", group_size=32, exclude=exclude)
    if bits == 4 and kind == "int":
        return QuantScheme(source="quantization_config", weight_format="int4", group_size=int(group or 128),
                           exclude=exclude)
    if bits == 8 and kind == "float":
        return QuantScheme(source="quantization_config", weight_format="fp8", exclude=exclude)
    if bits == 8 and kind == "int":
        return QuantScheme(source="quantization_config", weight_format="int8", exclude=exclude)
    raise ConfigError(model, "quantization_config.config_groups.weights",
                      f"unsupported compressed-tensors weights {bits}-bit {kind} group {group}")


def native_scheme(model: str, config: dict[str, Any], hf_quant: dict[str, Any] | None, dtype: str | None,
                  expert_dtype: str | None = None) -> QuantScheme:
    """The checkpoint's storage format: sidecar ``hf_quant_config.json`` first, then ``quantization_config``."""
    if hf_quant is not None:
        q = hf_quant.get("quantization")
        if not isinstance(q, dict):
            raise ConfigError(model, "hf_quant_config.quantization", "missing or not an object")
        return _modelopt(model, q, "hf_quant_config.json")
    qc = config.get("quantization_config")
    if qc is None:
        return unquantized_scheme(dtype)
    if not isinstance(qc, dict):
        raise ConfigError(model, "quantization_config", "not an object")
    method = str(qc.get("quant_method", "")).lower()
    if method == "fp8":
        block = qc.get("weight_block_size")
        return QuantScheme(
            source="quantization_config",
            weight_format="fp8_block" if block else "fp8",
            expert_format="mxfp4" if (expert_dtype or "").lower() == "fp4" else None,
            block_size=tuple(block) if block else None,
            exclude=tuple(qc.get("modules_to_not_convert") or ()),
        )
    if method == "mxfp4":
        return QuantScheme(source="quantization_config", weight_format="mxfp4", group_size=32,
                           exclude=tuple(qc.get("modules_to_not_convert") or ()), experts_only=True)
    if method == "compressed-tensors":
        return _compressed_tensors(model, qc)
    if method == "modelopt":
        if str(qc.get("quant_algo", "")).upper() == "MIXED_PRECISION" and not qc.get("quantized_layers") \
                and hf_quant is None:
            raise ConfigError(model, "quantization_config.quantized_layers",
                              "MIXED_PRECISION without the per-layer map (it is in hf_quant_config.json)")
        return _modelopt(model, qc, "quantization_config")
    if method in {"awq", "gptq"}:
        return QuantScheme(source="quantization_config", weight_format="awq_int4",
                           group_size=int(qc.get("group_size", 128)),
                           exclude=tuple(qc.get("modules_to_not_convert") or ()))
    raise ConfigError(model, "quantization_config.quant_method", f"unsupported quantization method {method!r}")
