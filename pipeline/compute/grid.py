"""The sizing grid: model x format x context x GPU x engine, computed column-wise with polars.

How the work is laid out (no Python call per cell, none per tensor per format):

1. **Tensors -> bytes per format.** Every tensor group of every model is one row of a polars frame (role, row
   length, element count, layer, expert share, exclusion flags). Bits per element for each format are columnar
   expressions that follow ``sizing_core.formats`` (``_scheme_bits`` for FP8/INT8/NVFP4/MXFP4/AWQ and the
   checkpoint's native scheme, llama.cpp's ``llama_tensor_get_type`` promotions plus the row-length fallback for
   GGUF mixes); totals, the largest layer and active bytes are group-bys, summed in tensor order so the grid is
   the same bit for bit on every run. ``tests/test_grid.py`` checks these bits equal
   ``sizing_core.formats.tensor_bits`` for every watchlist tensor and format, so a rule changed there and not
   here fails a test.
2. **Small tables built once**: per model and context the KV cache and recurrent state (sizing_core, per TP,
   each distinct layer mixer asked once); per (GPU, engine) usable memory and bandwidth; per (GPU, engine,
   format class) the engine's support verdict (``Engine.supports`` depends on the model only through its native
   format and whether it is MoE); per (model, engine) the activation peak.
3. **Cells** are the product (model, format, context) x (GPU, engine), an order-keeping cross join in the sorted
   order the table is published in (no sort, no string joins), with the look-ups above as gathers.

Engines: the small frames are collected with ``engine="in-memory"``. polars 2's default (``"auto"``) runs the
streaming engine, which costs ~5x more on these small plans of many expressions; the cell product, 0.6-2 M rows,
is the opposite case and runs streaming (see ``_cells``).

The GPU count is the planner's rule in closed form (TP inside a node up to the largest valid size, then whole
nodes of pipeline stages; layer split by whole layers for llama.cpp/MLX); the exact plan of the cells the exports
show comes from ``sizing_core.placement`` and ``tests/test_grid.py`` checks that the two agree.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import polars as pl

from sizing_core import Architecture
from sizing_core.engines import ENGINES, effective_format
from sizing_core.formats import (
    GGML_FALLBACK,
    GGML_TYPES,
    GGUF_MIXES,
    LINEAR_BITS,
    WEIGHT_FORMATS,
    _normalise,  # the module-name normalisation is_excluded applies to patterns
    format_scheme,
    ggml_bpw,
    is_excluded,
    mix_context,
)
from sizing_core.gpus import GPU
from sizing_core.kv_cache import cache_bytes
from sizing_core.layers import MoE
from sizing_core.placement import MAX_GPUS, valid_tensor_parallel
from sizing_core.tensors import EXPERT_ROLES, LINEAR_ROLES, Role
from sizing_core.throughput import DISCRETE_BANDWIDTH_EFFICIENCY, UNIFIED_BANDWIDTH_EFFICIENCY
from sizing_core.units import GB, GIB

GRID_FORMATS = ("native", *(f for f in WEIGHT_FORMATS if f != "fp16"))
GRID_CONTEXTS = (4096, 8192, 32768, 131072, 1048576)
TPS = (1, 2, 4, 8)
_UNQUANTIZED_NATIVE = ("bf16", "fp16", "fp32")


@lru_cache(maxsize=1)
def grid_version() -> str:
    """The code a sizing row depends on besides its model revision and GPU row: the sizing library and planner
    (``placement_cache.sizing_version``) and this module. Stored per row (``sizing.sizing_version``) so a changed
    rule re-sizes every model on the next run instead of leaving the old figures in place."""
    from pipeline.compute.placement_cache import sizing_version

    return hashlib.sha256((sizing_version() + hashlib.sha256(Path(__file__).read_bytes()).hexdigest()).encode())\
        .hexdigest()[:16]


def engines_for(gpu: GPU) -> list[str]:
    if gpu.kind == "apple":
        return ["llama.cpp", "mlx"]
    if gpu.kind == "unified":
        return ["llama.cpp"] if not gpu.is_nvidia else ["llama.cpp", "vllm"]
    if gpu.is_nvidia or gpu.is_amd_instinct:
        return ["vllm", "sglang", "llama.cpp"]
    return ["vllm"] if gpu.kind == "datacenter" else ["llama.cpp"]


# ---------------------------------------------------------------------------------------------- tensors -> bytes

_EXCLUDED: dict[tuple[str, tuple[str, ...]], bool] = {}


def _excluded(name: str, patterns: tuple[str, ...]) -> bool:
    """``is_excluded``, memoised: the same module names recur in every model of a family and in every run."""
    if not patterns:
        return False
    key = (name, patterns)
    hit = _EXCLUDED.get(key)
    if hit is None:
        hit = _EXCLUDED[key] = is_excluded(name, patterns)
    return hit


_DEFAULT_EXCLUDE = format_scheme("fp8").exclude  # what every non-GGUF target format keeps in BF16


def _is_literal(patterns: tuple[str, ...]) -> bool:
    """Plain module names: no glob characters, no ``re:``."""
    return not any(p.startswith("re:") or any(c in p for c in "*?[") for p in patterns)


def _exclusion_test(patterns: tuple[str, ...]):  # type: ignore[no-untyped-def]
    """A fast, exact ``is_excluded`` for ``patterns``: plain module names match a module or its parents, i.e. the
    name itself or any name below it; anything else goes to sizing_core."""
    if not patterns:
        return lambda _name: False
    if not _is_literal(patterns):
        return lambda name: _excluded(name, patterns)
    literal = tuple(_normalise(p) for p in patterns)
    below = tuple(p + "." for p in literal)
    return lambda name: name in literal or name.startswith(below)


def _excluded_expr(patterns: tuple[str, ...]) -> pl.Expr | None:
    """``_exclusion_test`` on the ``name`` column for plain module names (None for globs and regexes)."""
    if not patterns:
        return pl.lit(False)
    if not _is_literal(patterns):
        return None
    literal = [_normalise(p) for p in patterns]
    name = pl.col("name")
    return name.is_in(literal) | pl.any_horizontal(*[name.str.starts_with(p + ".") for p in literal])


def tensor_frame(models: dict[str, Architecture]) -> pl.DataFrame:
    """One row per tensor group of every model, with what the format rules read from it.

    Python only reads the tensors' fields (one list per field); element counts, expert shares, the attn_v
    position and the default exclusions are column expressions. A checkpoint's own exclusion list (a few quantized
    native checkpoints) is tested per linear tensor name in Python."""
    fields: dict[str, list] = {k: [] for k in ("model_id", "name", "role", "rows", "cols", "count", "layer",
                                               "first_layer_row", "n_layers", "excl_native")}
    moe_share: list[float | None] = []  # per decoder layer of every model, in order
    attn_v_pos: list[int] = []
    for model_id, arch in models.items():
        tensors = arch.tensors
        n = len(tensors)
        fields["model_id"].extend([model_id] * n)
        fields["name"].extend([t.name for t in tensors])
        fields["role"].extend([t.role for t in tensors])  # a StrEnum: polars stores its string
        fields["rows"].extend([t.rows for t in tensors])
        fields["cols"].extend([t.cols for t in tensors])
        fields["count"].extend([t.count for t in tensors])
        fields["layer"].extend([t.layer for t in tensors])
        fields["first_layer_row"].extend([len(moe_share)] * n)
        fields["n_layers"].extend([arch.num_layers] * n)
        native = arch.native
        patterns = native.exclude if native.weight_format not in _UNQUANTIZED_NATIVE else ()
        if patterns:
            excluded = _exclusion_test(patterns)
            fields["excl_native"].extend([t.role in LINEAR_ROLES and excluded(t.name) for t in tensors])
        else:
            fields["excl_native"].extend([False] * n)
        attn_v_index = {layer: k for k, layer in enumerate(arch.attention_layers())}
        moe_share.extend([layer.mlp.top_k / layer.mlp.num_experts if isinstance(layer.mlp, MoE) else None
                          for layer in arch.layers])
        attn_v_pos.extend([attn_v_index.get(i, 0) for i in range(arch.num_layers)])
    frame = pl.DataFrame(fields, schema={"model_id": pl.String, "name": pl.String, "role": pl.String,
                                         "rows": pl.Int64, "cols": pl.Int64, "count": pl.Int64, "layer": pl.Int64,
                                         "first_layer_row": pl.Int64, "n_layers": pl.Int64,
                                         "excl_native": pl.Boolean})
    default_excluded = _excluded_expr(_DEFAULT_EXCLUDE)
    if default_excluded is None:  # not plain names: sizing_core's matcher, per name
        default_excluded = pl.lit(pl.Series(map(_exclusion_test(_DEFAULT_EXCLUDE), fields["name"]),
                                            dtype=pl.Boolean))
    # per-layer figures by row number in the per-layer lists (no join); attn_v position: of the tensor's layer
    # (layer 0's for tensors outside layers), 0 outside attention layers
    layer, layer0 = pl.col("layer"), pl.col("layer").fill_null(0)
    row = pl.when(layer0 < pl.col("n_layers")).then(pl.col("first_layer_row") + layer0)  # null: no such layer
    return frame.lazy().select(
        "model_id", "role", "cols", numel=pl.col("rows") * pl.col("cols") * pl.col("count"), layer="layer",
        share=pl.when(_ROUTED & layer.is_not_null()).then(pl.lit(pl.Series(moe_share, dtype=pl.Float64)).gather(row))
        .otherwise(1.0),
        attn_v_pos=pl.lit(pl.Series(attn_v_pos, dtype=pl.Int64)).gather(row).fill_null(0),
        excl_default=_LINEAR & default_excluded, excl_native="excl_native").collect(engine="in-memory")


def _model_table(models: dict[str, Architecture]) -> pl.DataFrame:
    """Per model: what the native scheme and llama.cpp's mix rules need (``mix_context``)."""
    rows = []
    for model_id, arch in models.items():
        ctx = mix_context(arch)
        native = arch.native
        rows.append({"model_id": model_id, "n_layers": ctx.n_layers, "n_attn_v": ctx.n_attn_v,
                     "n_expert": ctx.n_expert, "gqa_ratio": ctx.gqa_ratio, "seventy_b": ctx.seventy_b,
                     "tied": ctx.tied, "mx4": ctx.mxfp4_experts, "unquantized": float(arch.dtype_bytes * 8),
                     "native_wf": native.weight_format, "native_ef": native.expert_format,
                     "native_group": native.group_size, "native_experts_only": native.experts_only})
    return pl.DataFrame(rows, schema={"model_id": pl.String, "n_layers": pl.Int64, "n_attn_v": pl.Int64,
                                      "n_expert": pl.Int64, "gqa_ratio": pl.Int64, "seventy_b": pl.Boolean,
                                      "tied": pl.Boolean, "mx4": pl.Boolean, "unquantized": pl.Float64,
                                      "native_wf": pl.String, "native_ef": pl.String, "native_group": pl.Int64,
                                      "native_experts_only": pl.Boolean})


def _role_in(*roles: Role) -> pl.Expr:
    return pl.col("role").is_in([r.value for r in roles])


_LINEAR = _role_in(*LINEAR_ROLES)
_ROUTED = _role_in(*EXPERT_ROLES)


def _linear_bits(fmt: pl.Expr, group: pl.Expr) -> pl.Expr:
    """``_scheme_bits`` for a quantized linear weight in ``fmt`` (per row), scale overheads included."""
    return (pl.when(fmt == "int4").then(4.0 + 16 / pl.when(group > 0).then(group).otherwise(128))
            .when(fmt == "int8").then(8.0 + 32 / pl.col("cols"))
            .when((fmt == "awq_int4") & (group > 0)).then(4.0 + (16 + 4) / group)
            .otherwise(fmt.replace_strict(LINEAR_BITS, default=None, return_dtype=pl.Float64)))


def _format_bits(fmt: str) -> pl.Expr:
    """Bits per element of each tensor row in a non-GGUF format (``tensor_bits`` for those formats)."""
    if fmt in ("bf16", "fp16"):
        return pl.lit(16.0)
    scheme = format_scheme(fmt)
    quantized = _LINEAR & ~pl.col("excl_default")
    return pl.when(quantized).then(_linear_bits(pl.lit(scheme.weight_format), pl.lit(scheme.group_size or 0)))\
        .otherwise(16.0)


def _native_bits() -> pl.Expr:
    unquantized = pl.col("unquantized")
    fmt = pl.when(_ROUTED & pl.col("native_ef").is_not_null()).then(pl.col("native_ef")).otherwise(pl.col("native_wf"))
    quantized = _LINEAR & ~pl.col("excl_native") & ~(pl.col("native_experts_only") & ~_ROUTED)
    scheme = pl.when(pl.col("role") == Role.VISION.value).then(16.0).when(quantized)\
        .then(_linear_bits(fmt, pl.col("native_group").fill_null(0))).otherwise(unquantized)
    return pl.when(pl.col("native_wf").is_in(_UNQUANTIZED_NATIVE))\
        .then(pl.col("native_wf").replace_strict(LINEAR_BITS, default=None, return_dtype=pl.Float64))\
        .otherwise(scheme)


def _use_more_bits(i: pl.Expr, n: pl.Expr) -> pl.Expr:
    """llama.cpp ``use_more_bits``: first and last eighth of layers, and every third layer in between."""
    return (i < n // 8) | (i >= 7 * n // 8) | ((i - n // 8) % 3 == 2)


#: What llama.cpp's mix rules read from a tensor row, as a few booleans (few distinct combinations, so the rules
#: are evaluated on the distinct ones and joined back).
_GGUF_KEY = ("role", "cols", "e8", "g4", "seventy_b", "tied", "mx4", "umb_i", "lt16_i", "lt8_i", "umb_k", "lt2_k")


def _gguf_features() -> dict[str, pl.Expr]:
    i, n, k = pl.col("layer").fill_null(0), pl.col("n_layers"), pl.col("attn_v_pos")
    return {"e8": pl.col("n_expert") == 8, "g4": pl.col("gqa_ratio") >= 4, "umb_i": _use_more_bits(i, n),
            "lt16_i": i < n // 16, "lt8_i": i < n // 8, "umb_k": _use_more_bits(k, pl.col("n_attn_v")),
            "lt2_k": k < 2}


def _gguf_type(mix: str) -> pl.Expr:
    """llama.cpp's tensor type for ``mix`` per row of ``_GGUF_KEY`` (``sizing_core.formats.gguf_type``)."""
    base = GGUF_MIXES[mix]
    role = pl.col("role")
    e8, g4 = pl.col("e8"), pl.col("g4")
    lit = pl.lit
    mxfp4 = pl.col("mx4") & _ROUTED  # experts kept in MXFP4 (formats.GGUF_KEEPS_MXFP4_EXPERTS)
    if mix == "q8_0":
        return pl.when(_role_in(Role.NORM, Role.SSM_CONV, Role.ROUTER)).then(lit("F32"))\
            .when(role == Role.VISION.value).then(lit("F16")).when(mxfp4).then(lit("MXFP4")).otherwise(lit("Q8_0"))
    if mix == "q2_k":
        attn_v = pl.when(g4).then(lit("Q4_K")).otherwise(lit("Q3_K"))
    elif mix == "q3_k_m":
        attn_v = pl.when(pl.col("lt2_k")).then(lit("Q5_K")).otherwise(lit("Q4_K"))
    elif mix == "iq4_xs":
        attn_v = pl.when(g4).then(lit("Q5_K")).otherwise(lit(base))
    elif mix in ("q4_k_m", "q5_k_m"):
        attn_v = pl.when(pl.col("umb_k")).then(lit("Q6_K")).otherwise(lit(base))
    else:
        attn_v = lit(base)
    attn_v = pl.when(pl.col("seventy_b") & attn_v.is_in(["Q3_K", "Q4_K"])).then(lit("Q5_K")).otherwise(attn_v)
    attn_v = pl.when(e8).then(lit("Q8_0")).otherwise(attn_v)
    if mix == "q2_k":
        down = lit("Q3_K")
    elif mix == "q3_k_m":
        down = pl.when(pl.col("lt16_i")).then(lit("Q5_K")).otherwise(lit("Q4_K"))
    elif mix in ("q4_k_m", "q5_k_m"):
        down = pl.when(pl.col("umb_i")).then(lit("Q6_K")).otherwise(lit(base))
    elif mix == "iq4_xs":
        down = pl.when(pl.col("lt8_i")).then(lit("Q5_K")).otherwise(lit(base))
    else:
        down = lit(base)
    qkv = {"q2_k": "Q4_K", "q3_k_m": "Q4_K", "q4_k_m": "Q5_K", "q5_k_m": "Q6_K"}.get(mix, base)
    out_not8 = {"q2_k": "Q3_K", "q3_k_m": "Q4_K"}.get(mix, base)
    out_8 = "Q5_K" if mix in ("q2_k", "q3_k_m", "q4_k_m", "iq4_xs") else base
    return (pl.when(_role_in(Role.NORM, Role.SSM_CONV, Role.ROUTER)).then(lit("F32"))
            .when(role == Role.VISION.value).then(lit("F16"))
            .when(mxfp4).then(lit("MXFP4"))
            .when((role == Role.OUTPUT.value) | ((role == Role.TOKEN_EMBD.value) & pl.col("tied"))).then(lit("Q6_K"))
            .when(role == Role.TOKEN_EMBD.value).then(lit(base))
            .when(_role_in(Role.ATTN_V, Role.ATTN_KV_B)).then(attn_v)
            .when((role == Role.ATTN_K.value) & e8).then(lit("Q8_0"))
            .when(role == Role.ATTN_QKV.value).then(lit(qkv))
            .when(_role_in(Role.FFN_DOWN, Role.FFN_DOWN_EXPS, Role.FFN_DOWN_SHEXP)).then(down)
            .when(role == Role.ATTN_OUTPUT.value).then(pl.when(e8).then(lit(out_8)).otherwise(lit(out_not8)))
            .otherwise(lit(base)))


_BLOCK = {k: v[0] for k, v in GGML_TYPES.items()}
_BPW = {k: ggml_bpw(k) for k in GGML_TYPES}


def _gguf_bits(kind: pl.Expr) -> pl.Expr:
    """Bits per element of a ggml type, with llama.cpp's fallback when a row is not a whole number of blocks."""
    cols = pl.col("cols")
    fallback = kind.replace_strict(GGML_FALLBACK, default=None, return_dtype=pl.String)
    misfit = (cols % kind.replace_strict(_BLOCK, return_dtype=pl.Int64) != 0) & fallback.is_not_null()
    fallback_kind = pl.when(cols % fallback.replace_strict(_BLOCK, default=1, return_dtype=pl.Int64) != 0)\
        .then(pl.lit("F16")).otherwise(fallback)
    return pl.when(misfit).then(fallback_kind).otherwise(kind).replace_strict(_BPW, return_dtype=pl.Float64)


def bits_expr(fmt: str) -> pl.Expr:
    """Bits per element of each tensor row in a non-GGUF ``fmt`` (native, bf16, fp8, ...)."""
    return _native_bits() if fmt == "native" else _format_bits(fmt)


def tensor_bits_frame(models: dict[str, Architecture], formats: Iterable[str] = GRID_FORMATS) -> pl.DataFrame:
    """The tensor frame with one ``bits_<format>`` column per format."""
    rows = tensor_frame(models).lazy().join(_model_table(models).lazy(), on="model_id", how="left",
                                            maintain_order="left").with_columns(**_gguf_features())
    mixes = [f for f in formats if f in GGUF_MIXES]
    gguf = rows.select(_GGUF_KEY).unique().with_columns(**{f"type_{m}": _gguf_type(m) for m in mixes})\
        .select(*_GGUF_KEY, *[_gguf_bits(pl.col(f"type_{m}")).alias(f"bits_{m}") for m in mixes])
    return rows.with_columns(**{f"bits_{f}": bits_expr(f) for f in formats if f not in GGUF_MIXES})\
        .join(gguf, on=list(_GGUF_KEY), how="left", maintain_order="left", nulls_equal=True)\
        .drop(*_gguf_features()).collect(engine="in-memory")


def format_figures(models: dict[str, Architecture]) -> pl.DataFrame:
    """Per model and format: weight bytes, largest layer, active bytes per token (top-k of routed experts).

    Sums are taken per group over its rows in tensor order (``list.sum`` of the group's values): polars' parallel
    group-by ``sum`` adds partial sums in whatever order its threads finish, so the last bits of a total could
    change from one run to the next; the grid must not (incremental runs compare against earlier results)."""
    not_embd = pl.col("role") != Role.TOKEN_EMBD.value
    weights = [f"w_{f}" for f in GRID_FORMATS]
    active = [f"a_{f}" for f in GRID_FORMATS]
    nbytes = tensor_bits_frame(models).lazy().select(
        "model_id", "layer", *[(pl.col("numel") * pl.col(f"bits_{f}") / 8).alias(f"w_{f}") for f in GRID_FORMATS],
        *[pl.when(not_embd).then(pl.col("numel") * pl.col(f"bits_{f}") / 8 * pl.col("share")).otherwise(0.0)
          .alias(f"a_{f}") for f in GRID_FORMATS])
    totals = nbytes.group_by("model_id").agg(pl.col(*weights, *active)).with_columns(pl.col(*weights, *active)
                                                                                     .list.sum())
    layers = nbytes.filter(pl.col("layer").is_not_null()).group_by("model_id", "layer").agg(pl.col(*weights))\
        .with_columns(pl.col(*weights).list.sum())\
        .group_by("model_id").agg(*[pl.col(f"w_{f}").max().alias(f"l_{f}") for f in GRID_FORMATS])
    wide = totals.join(layers, on="model_id", how="left").collect(engine="in-memory")
    return pl.concat([wide.select("model_id", format=pl.lit(f), weights_bytes=f"w_{f}",
                                  max_layer_bytes=pl.col(f"l_{f}").fill_null(0.0), active_bytes=f"a_{f}")
                      for f in GRID_FORMATS])


# ------------------------------------------------------------------------------------------------- small tables


def _mixer_key(mixer: object) -> object:
    """Equal mixers (the same attention or SSM configuration on many layers) share one key; an unhashable one
    keys by identity."""
    try:
        hash(mixer)
    except TypeError:
        return id(mixer)
    return mixer


def _cache_sums(arch: Architecture, tps: tuple[int, ...]) -> tuple[list[list[float]], list[float]]:
    """``kv_bytes_per_request(arch, context, "bf16", tp)`` for every grid context and ``state_bytes_per_request(arch,
    tp)``, for each ``tp``. The same per-layer sums sizing_core.kv_cache takes, in the same layer order (so the
    same floats), with each distinct mixer asked once instead of once per layer. ``tests/grid_reference.py`` calls
    sizing_core.kv_cache itself, so a rule added there and not here fails the grid comparison test."""
    per_token = cache_bytes("bf16")
    distinct: dict[object, int] = {}
    mixers, order = [], []  # distinct mixers; per layer with a mixer, its distinct mixer's index
    for layer in arch.layers:
        if layer.mixer is not None:
            i = distinct.setdefault(_mixer_key(layer.mixer), len(distinct))
            if i == len(mixers):
                mixers.append(layer.mixer)
            order.append(i)
    kv_by_mixer = [[[m.kv_bytes_per_request(c, per_token, tp) for m in mixers] for c in GRID_CONTEXTS] for tp in tps]
    state_by_mixer = [[m.state_bytes(tp) for m in mixers] for tp in tps]
    kv = [[sum([by_mixer[i] for i in order]) for by_mixer in per_tp] for per_tp in kv_by_mixer]
    state = [sum([by_mixer[i] for i in order]) for by_mixer in state_by_mixer]
    return kv, state


def context_table(models: dict[str, Architecture]) -> pl.DataFrame:
    """Per model and context: KV and state at TP 1 and at the largest valid TP <= 8."""
    cols: dict[str, list] = {k: [] for k in ("model_id", "context", "above_max_context", "kv1", "state1", "max_tp",
                                             "kv_max_tp", "state_max_tp")}
    for model_id, arch in models.items():
        valid = [t for t in TPS if valid_tensor_parallel(arch, t)]
        if not valid:
            continue
        max_tp = max(valid)
        (kv1, kv_max), (state1, state_max) = _cache_sums(arch, (1, max_tp))
        n = len(GRID_CONTEXTS)
        cols["model_id"].extend([model_id] * n)
        cols["context"].extend(GRID_CONTEXTS)
        cols["above_max_context"].extend([arch.max_context is not None and c > arch.max_context
                                          for c in GRID_CONTEXTS])
        cols["kv1"].extend(kv1)
        cols["state1"].extend([state1] * n)
        cols["max_tp"].extend([max_tp] * n)
        cols["kv_max_tp"].extend(kv_max)
        cols["state_max_tp"].extend([state_max] * n)
    return pl.DataFrame(cols, schema={"model_id": pl.String, "context": pl.Int64, "above_max_context": pl.Boolean,
                                      "kv1": pl.Float64, "state1": pl.Float64, "max_tp": pl.Int64,
                                      "kv_max_tp": pl.Float64, "state_max_tp": pl.Float64})


def gpu_table(gpus: Iterable[GPU]) -> pl.DataFrame:
    """GPU x engine rows: usable memory, machine size, effective bandwidth."""
    rows = []
    for gpu in gpus:
        for engine_id in engines_for(gpu):
            engine = ENGINES[engine_id]
            rows.append({"gpu_id": gpu.id, "engine": engine_id, "gpu_kind": gpu.kind,
                         "usable_bytes": float(engine.usable_bytes(gpu)), "node_size": gpu.node_size,
                         "tensor_parallel": engine.tensor_parallel,
                         "bandwidth": float(gpu.bandwidth_gbs or 0) * GB * (
                             UNIFIED_BANDWIDTH_EFFICIENCY if gpu.kind in ("apple", "unified")
                             else DISCRETE_BANDWIDTH_EFFICIENCY)})
    return pl.DataFrame(rows, schema={"gpu_id": pl.String, "engine": pl.String, "gpu_kind": pl.String,
                                      "usable_bytes": pl.Float64, "node_size": pl.Int64,
                                      "tensor_parallel": pl.Boolean, "bandwidth": pl.Float64})


def _support_class(arch: Architecture, fmt: str, moe: bool) -> tuple[str, str | None, bool, bool]:
    """What ``Engine.supports`` reads from a model: the format (native: the stored one, and whether its scheme
    is known), MoE or not. The grid test compares every cell with per-cell ``supports`` calls."""
    native = fmt == "native"
    return fmt, arch.native.weight_format if native else None, moe, native and bool(arch.native.unsupported)


# ------------------------------------------------------------------------------------------------------- cells


def compute_grid(models: dict[str, tuple[str, Architecture]], gpus: list[GPU]) -> pl.DataFrame:
    """All cells for ``models`` (id -> (revision, architecture)) on ``gpus``, sorted by model, format, context,
    GPU and engine."""
    if not models:
        return pl.DataFrame()
    archs = {k: v[1] for k, v in models.items()}
    revisions = {k: v[0] for k, v in models.items()}
    hw = gpu_table(gpus).sort("gpu_id", "engine").with_row_index("hw_idx")
    n_hw = hw.height
    gpu_by_id = {g.id: g for g in gpus}
    # support verdicts, once per (GPU, engine, support class); activation peaks, once per (model, engine)
    classes: dict[tuple[str, str | None, bool, bool], int] = {}
    class_arch: dict[tuple[str, str | None, bool, bool], Architecture] = {}
    mf: dict[str, list] = {k: [] for k in ("model_id", "format", "revision", "stored_format", "num_layers",
                                           "support_idx")}
    for model_id, arch in archs.items():
        moe = arch.is_moe
        formats = [f for f in GRID_FORMATS if not (f == "native" and arch.native.unsupported)]
        # (an unknown checkpoint scheme has no native cells: sizing #11)
        for fmt in formats:
            key = _support_class(arch, fmt, moe)
            if key not in classes:
                classes[key] = len(classes)
                class_arch[key] = arch
            mf["support_idx"].append(classes[key])
        mf["model_id"].extend([model_id] * len(formats))
        mf["format"].extend(formats)
        mf["revision"].extend([revisions[model_id]] * len(formats))
        mf["stored_format"].extend([effective_format(arch, f) for f in formats])
        mf["num_layers"].extend([arch.num_layers] * len(formats))
    runs, native = [], []
    hw_pairs = [(gpu_by_id[gpu_id], ENGINES[engine_id])
                for gpu_id, engine_id in hw.select("gpu_id", "engine").iter_rows()]
    for (fmt, _, _, _), arch in class_arch.items():
        for gpu, engine in hw_pairs:
            s = engine.supports(gpu, fmt, arch)
            runs.append(s.runs)
            native.append(s.native)
    engine_ids = sorted({e for e in hw["engine"]})
    engine_idx = {e: i for i, e in enumerate(engine_ids)}
    model_ids = sorted(archs)
    activation = [float(ENGINES[e].activation_bytes(archs[m], 1)) for m in model_ids for e in engine_ids]

    mf = pl.DataFrame(mf, schema={"model_id": pl.String, "format": pl.String, "revision": pl.String,
                                  "stored_format": pl.String, "num_layers": pl.Int64, "support_idx": pl.Int64})\
        .join(format_figures(archs), on=["model_id", "format"])
    mf = mf.with_columns(model_idx=pl.col("model_id").replace_strict({m: i for i, m in enumerate(model_ids)},
                                                                      return_dtype=pl.Int64))
    mfc = mf.join(context_table(archs), on="model_id").sort("model_id", "format", "context")
    hw = hw.with_columns(engine_idx=pl.col("engine").replace_strict(engine_idx, return_dtype=pl.Int64))
    lookups = _Lookups(runs=pl.Series(runs, dtype=pl.Boolean), native=pl.Series(native, dtype=pl.Boolean),
                       activation=pl.Series(activation, dtype=pl.Float64), n_hw=n_hw, n_engines=len(engine_ids))
    return _cells(mfc, hw, lookups)


class _Lookups(NamedTuple):
    """Per-cell look-ups by integer index: support verdicts by (support class, GPU x engine row), activation peaks
    by (model, engine)."""

    runs: pl.Series
    native: pl.Series
    activation: pl.Series
    n_hw: int
    n_engines: int


def _cells(mfc: pl.DataFrame, hw: pl.DataFrame, lookups: _Lookups) -> pl.DataFrame:
    """The (model, format, context) x (GPU, engine) product and every cell's columns.

    What depends on one side only is computed on that side's small table first; the product then takes a few
    staged ``with_columns``, each column computed once (one big ``select`` with shared sub-expressions is ~2x
    slower). The product runs on polars' streaming engine: it evaluates the cross join and the columns morsel by
    morsel, in parallel, without materialising every input column for all cells first (~1.5x faster than the
    in-memory engine here); ``maintain_order`` keeps the published order (left-major: model, format, context; then
    GPU, engine)."""
    gib = pl.lit(GIB)
    left = mfc.lazy().select(
        "model_id", "revision", "format", "stored_format", "context", "above_max_context", "support_idx", "model_idx",
        "weights_bytes", "max_layer_bytes", "active_bytes", "kv1", "max_tp", layers="num_layers",
        single=pl.col("weights_bytes") + pl.col("kv1") + pl.col("state1"),
        # whole layers per GPU: a stage holds floor(budget / per-layer load) layers (largest layer, cache spread)
        layer_load=pl.col("max_layer_bytes") + (pl.col("kv1") + pl.col("state1")) / pl.col("num_layers"),
        cache_max=pl.col("kv_max_tp") + pl.col("state_max_tp"),
        weights_gib=pl.col("weights_bytes") / gib, kv_gib=pl.col("kv1") / gib, state_gib=pl.col("state1") / gib,
    ).with_columns(cache_max_layer=pl.col("cache_max") / pl.col("layers"))
    right = hw.lazy().select("hw_idx", "gpu_id", "gpu_kind", "engine", "engine_idx", "usable_bytes", "node_size",
                             "tensor_parallel", "bandwidth", usable_gib=pl.col("usable_bytes") / gib)
    support = pl.col("support_idx") * lookups.n_hw + pl.col("hw_idx")
    cells = left.join(right, how="cross", maintain_order="left_right").with_columns(
        runs=pl.lit(lookups.runs).gather(support), native_support=pl.lit(lookups.native).gather(support),
        activation_bytes=pl.lit(lookups.activation).gather(pl.col("model_idx") * lookups.n_engines
                                                           + pl.col("engine_idx")),
        tp_cap=pl.min_horizontal(pl.col("max_tp"), pl.col("node_size")),  # (max_tp: the largest valid TP <= 8)
    ).with_columns(budget=pl.col("usable_bytes") - pl.col("activation_bytes"))
    budget, single, tp_cap, layers = pl.col("budget"), pl.col("single"), pl.col("tp_cap"), pl.col("layers")
    tensor_parallel = pl.col("tensor_parallel")
    cells = cells.with_columns(
        per_device=(budget / pl.col("layer_load")).floor(),
        per_stage=(budget / ((pl.col("max_layer_bytes") / tp_cap) + pl.col("cache_max_layer"))).floor(),
        node_load=pl.col("weights_bytes") / tp_cap + pl.col("cache_max"),
        fits_one=single <= budget)
    per_device, per_stage = pl.col("per_device"), pl.col("per_stage")
    cells = cells.with_columns(
        split_gpus=pl.when(pl.col("fits_one")).then(1).when(per_device >= 1).then(
            pl.max_horizontal((single / budget).ceil(), (layers / per_device).ceil())).otherwise(None),
        stages=pl.max_horizontal((pl.col("node_load") / budget).ceil(), (layers / per_stage).ceil()))
    # tensor-parallel engines: inside one machine any TP x PP = n works (TP 1 x PP n at worst), so the split
    # count stands while it fits a machine; beyond, TP takes the whole machine and PP counts machines
    split_gpus = pl.col("split_gpus")
    tp_gpus = pl.when(split_gpus <= pl.col("node_size")).then(split_gpus).otherwise(tp_cap * pl.col("stages"))
    fits_a_layer = pl.when(tensor_parallel).then(per_stage >= 1).otherwise(per_device >= 1)
    cells = cells.with_columns(
        gpus=pl.when(tensor_parallel).then(tp_gpus).otherwise(split_gpus),
        feasible=pl.col("runs") & ~pl.col("above_max_context") & (budget > 0) & fits_a_layer)
    cells = cells.with_columns(est_gpus=pl.when(pl.col("feasible") & (pl.col("gpus") <= MAX_GPUS))
                               .then(pl.col("gpus")).otherwise(None).cast(pl.Int64))
    est_gpus = pl.col("est_gpus")
    decode = pl.col("bandwidth") / (pl.col("active_bytes") / pl.when(tensor_parallel)
                                    .then(pl.min_horizontal(est_gpus, tp_cap)).otherwise(1)
                                    + pl.col("kv1"))
    return cells.select(
        "model_id", "revision", "format", "stored_format", "context", "gpu_id", "gpu_kind", "engine", "runs",
        "native_support", "above_max_context", "weights_gib", "kv_gib", "state_gib",
        single_gpu_gib=(single + pl.col("activation_bytes")) / gib, usable_gib="usable_gib",
        fits_single=pl.col("feasible") & pl.col("fits_one"), est_gpus=est_gpus,
        decode_tokens_per_s=pl.when(est_gpus.is_not_null() & (pl.col("bandwidth") > 0)).then(decode)
        .otherwise(None)).collect(engine="streaming")
