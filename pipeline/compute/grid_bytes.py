"""The sizing grid's first step: every tensor group of every model as one row of a polars frame, and bits per
element for each weight format as columnar expressions (see ``grid.py``, step 1). ``tests/test_grid.py`` checks
these bits equal ``sizing_core.formats.tensor_bits`` for every watchlist tensor and format.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from sizing_core import Architecture
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
    tensor_bits,
)
from sizing_core.layers import MoE
from sizing_core.tensors import EXPERT_ROLES, LINEAR_ROLES, TOWER_ROLES, Role

GRID_FORMATS = ("native", *(f for f in WEIGHT_FORMATS if f != "fp16"))



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
                                               "first_layer_row", "n_layers", "native_bits")}
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
        # the checkpoint's own scheme, per tensor, from sizing_core itself: a native rule (GPTQ widths, bitsandbytes,
        # compressed-tensors groups, towers) is written once; unknown schemes have no native cells (null)
        fields["native_bits"].extend(tensor_bits(arch, "native") if not native.unsupported else [None] * n)
        attn_v_index = {layer: k for k, layer in enumerate(arch.attention_layers())}
        moe_share.extend([layer.mlp.top_k / layer.mlp.num_experts if isinstance(layer.mlp, MoE) else None
                          for layer in arch.layers])
        attn_v_pos.extend([attn_v_index.get(i, 0) for i in range(arch.num_layers)])
    frame = pl.DataFrame(fields, schema={"model_id": pl.String, "name": pl.String, "role": pl.String,
                                         "rows": pl.Int64, "cols": pl.Int64, "count": pl.Int64, "layer": pl.Int64,
                                         "first_layer_row": pl.Int64, "n_layers": pl.Int64,
                                         "native_bits": pl.Float64})
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
        excl_default=_LINEAR & default_excluded, native_bits="native_bits").collect(engine="in-memory")


def _model_table(models: dict[str, Architecture]) -> pl.DataFrame:
    """Per model: what llama.cpp's mix rules need (``mix_context``)."""
    rows = []
    for model_id, arch in models.items():
        ctx = mix_context(arch)
        rows.append({"model_id": model_id, "n_layers": ctx.n_layers, "n_attn_v": ctx.n_attn_v,
                     "n_expert": ctx.n_expert, "gqa_ratio": ctx.gqa_ratio, "seventy_b": ctx.seventy_b,
                     "tied": ctx.tied, "mx4": ctx.mxfp4_experts})
    return pl.DataFrame(rows, schema={"model_id": pl.String, "n_layers": pl.Int64, "n_attn_v": pl.Int64,
                                      "n_expert": pl.Int64, "gqa_ratio": pl.Int64, "seventy_b": pl.Boolean,
                                      "tied": pl.Boolean, "mx4": pl.Boolean})


def _role_in(*roles: Role) -> pl.Expr:
    return pl.col("role").is_in([r.value for r in roles])


_LINEAR = _role_in(*LINEAR_ROLES)
_F16_ROLES = (*TOWER_ROLES, Role.POSITION)  # towers (mmproj) and position tables: F16 in every GGUF mix
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
    """The native format's bits: computed per tensor by ``sizing_core.formats.tensor_bits`` (``tensor_frame``)."""
    return pl.col("native_bits")


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
            .when(_role_in(*_F16_ROLES)).then(lit("F16")).when(mxfp4).then(lit("MXFP4")).otherwise(lit("Q8_0"))
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
            .when(_role_in(*_F16_ROLES)).then(lit("F16"))
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
    """Per model and format: weight bytes, largest layer, active bytes per token (top-k of routed experts) and the
    routed experts' part of them (they stream slower: ``sizing_core.engine_speed.EXPERT_EFFICIENCY``).

    Sums are taken per group over its rows in tensor order (``list.sum`` of the group's values): polars' parallel
    group-by ``sum`` adds partial sums in whatever order its threads finish, so the last bits of a total could
    change from one run to the next; the grid must not (incremental runs compare against earlier results)."""
    not_embd = pl.col("role") != Role.TOKEN_EMBD.value
    weights = [f"w_{f}" for f in GRID_FORMATS]
    active = [f"a_{f}" for f in GRID_FORMATS]
    experts = [f"e_{f}" for f in GRID_FORMATS]
    nbytes = tensor_bits_frame(models).lazy().select(
        "model_id", "layer", *[(pl.col("numel") * pl.col(f"bits_{f}") / 8).alias(f"w_{f}") for f in GRID_FORMATS],
        *[pl.when(not_embd).then(pl.col("numel") * pl.col(f"bits_{f}") / 8 * pl.col("share")).otherwise(0.0)
          .alias(f"a_{f}") for f in GRID_FORMATS],
        *[pl.when(_ROUTED & pl.col("layer").is_not_null()).then(pl.col("numel") * pl.col(f"bits_{f}") / 8
                                                                 * pl.col("share")).otherwise(0.0)
          .alias(f"e_{f}") for f in GRID_FORMATS])
    totals = nbytes.group_by("model_id").agg(pl.col(*weights, *active, *experts))\
        .with_columns(pl.col(*weights, *active, *experts).list.sum())
    layers = nbytes.filter(pl.col("layer").is_not_null()).group_by("model_id", "layer").agg(pl.col(*weights))\
        .with_columns(pl.col(*weights).list.sum())\
        .group_by("model_id").agg(*[pl.col(f"w_{f}").max().alias(f"l_{f}") for f in GRID_FORMATS])
    wide = totals.join(layers, on="model_id", how="left").collect(engine="in-memory")
    return pl.concat([wide.select("model_id", format=pl.lit(f), weights_bytes=f"w_{f}",
                                  max_layer_bytes=pl.col(f"l_{f}").fill_null(0.0), active_bytes=f"a_{f}",
                                  expert_bytes=f"e_{f}")
                      for f in GRID_FORMATS])


