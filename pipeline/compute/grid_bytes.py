"""The sizing grid's first step: every tensor group of every model as one row of a polars frame, and bits per
element for each weight format as columnar expressions (see ``grid.py``, step 1).

The rules are sizing_core's, called on columns (``pipeline/compute/columns.py``): llama.cpp's mix rules are data
(``sizing_core/data/format_bits.json``, read by ``formats.gguf_rule_type``), the row-length fallback is
``formats.gguf_row_type`` and a quantized linear weight's bits ``formats.linear_bits``. What is left here is laying
the tensors out as rows. ``tests/test_grid.py`` checks these bits equal ``sizing_core.formats.tensor_bits`` for every
watchlist tensor and format.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from pipeline.compute.columns import COLUMNS
from sizing_core import Architecture
from sizing_core.formats import (
    GGML_BPW,
    GGUF_MIXES,
    WEIGHT_FORMATS,
    _normalise,  # the module-name normalisation is_excluded applies to patterns
    checkpoint_format,
    format_scheme,
    gguf_row_type,
    gguf_rule_type,
    is_excluded,
    linear_bits,
    mix_context,
    mix_features,
    tensor_bits,
)
from sizing_core.layers import MoE
from sizing_core.tensors import EXPERT_ROLES, LINEAR_ROLES, Role

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

    Python only reads the tensors' fields (one list per field); element counts, expert groups, the attn_v
    position and the default exclusions are column expressions. A checkpoint's own exclusion list (a few quantized
    native checkpoints) is tested per linear tensor name in Python."""
    fields: dict[str, list] = {k: [] for k in ("model_id", "name", "role", "rows", "cols", "count", "layer",
                                               "first_layer_row", "n_layers", "native_bits",
                                               "checkpoint_format")}
    moe_experts: list[int | None] = []  # per decoder layer of every model, in order: (experts, top-k) of its MoE
    moe_top_k: list[int | None] = []
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
        fields["first_layer_row"].extend([len(moe_experts)] * n)
        fields["n_layers"].extend([arch.num_layers] * n)
        native = arch.native
        # the checkpoint's own scheme, per tensor, from sizing_core itself: a native rule (GPTQ widths, bitsandbytes,
        # compressed-tensors groups, towers) is written once; unknown schemes have no native cells (null)
        fields["native_bits"].extend(tensor_bits(arch, "native") if not native.unsupported else [None] * n)
        fields["checkpoint_format"].extend([checkpoint_format(arch)] * n)  # that format's bits are the native ones
        attn_v_index = {layer: k for k, layer in enumerate(arch.attention_layers())}
        moe_experts.extend([layer.mlp.num_experts if isinstance(layer.mlp, MoE) else None for layer in arch.layers])
        moe_top_k.extend([layer.mlp.top_k if isinstance(layer.mlp, MoE) else None for layer in arch.layers])
        attn_v_pos.extend([attn_v_index.get(i, 0) for i in range(arch.num_layers)])
    frame = pl.DataFrame(fields, schema={"model_id": pl.String, "name": pl.String, "role": pl.String,
                                         "rows": pl.Int64, "cols": pl.Int64, "count": pl.Int64, "layer": pl.Int64,
                                         "first_layer_row": pl.Int64, "n_layers": pl.Int64,
                                         "native_bits": pl.Float64, "checkpoint_format": pl.String})
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
        attn_v_pos=pl.lit(pl.Series(attn_v_pos, dtype=pl.Int64)).gather(row).fill_null(0),
        n_exp=pl.when(_ROUTED & layer.is_not_null()).then(pl.lit(pl.Series(moe_experts, dtype=pl.Int64)).gather(row)),
        top_k=pl.when(_ROUTED & layer.is_not_null()).then(pl.lit(pl.Series(moe_top_k, dtype=pl.Int64)).gather(row)),
        excl_default=_LINEAR & default_excluded, native_bits="native_bits",
        checkpoint_format="checkpoint_format").collect(engine="in-memory")


def _model_table(models: dict[str, Architecture]) -> pl.DataFrame:
    """Per model: what llama.cpp's mix rules need (``mix_context``)."""
    rows = []
    for model_id, arch in models.items():
        ctx = mix_context(arch)
        rows.append({"model_id": model_id, "n_layers": ctx.n_layers, "n_attn_v": ctx.n_attn_v,
                     "n_expert": ctx.n_expert, "gqa_ratio": ctx.gqa_ratio, "seventy_b": ctx.seventy_b,
                     "tied": ctx.tied, "mxfp4_experts": ctx.mxfp4_experts})
    return pl.DataFrame(rows, schema={"model_id": pl.String, "n_layers": pl.Int64, "n_attn_v": pl.Int64,
                                      "n_expert": pl.Int64, "gqa_ratio": pl.Int64, "seventy_b": pl.Boolean,
                                      "tied": pl.Boolean, "mxfp4_experts": pl.Boolean})


def _role_in(*roles: Role) -> pl.Expr:
    return pl.col("role").is_in([r.value for r in roles])


_LINEAR = _role_in(*LINEAR_ROLES)
_ROUTED = _role_in(*EXPERT_ROLES)


def _format_bits(fmt: str) -> pl.Expr:
    """Bits per element of each tensor row in a non-GGUF format (``tensor_bits`` for those formats)."""
    if fmt in ("bf16", "fp16"):
        return pl.lit(16.0)
    scheme = format_scheme(fmt)
    quantized = _LINEAR & ~pl.col("excl_default")
    bits = linear_bits(scheme.weight_format, scheme.group_size, pl.col("rows"), pl.col("cols"), 16.0)
    return pl.when(quantized).then(bits).otherwise(16.0)


def _native_bits() -> pl.Expr:
    """The native format's bits: computed per tensor by ``sizing_core.formats.tensor_bits`` (``tensor_frame``)."""
    return pl.col("native_bits")


#: What llama.cpp's mix rules read from a tensor row: its role and row length, the model flags and
#: ``formats.mix_features`` (few distinct combinations, so the rules are evaluated on the distinct ones and joined
#: back).
_FLAGS = ("tied", "mxfp4_experts", "seventy_b")
_FEATURES = tuple(mix_features(0, 1, 0, 1, 0, 1))
_GGUF_KEY = ("role", "cols", *_FLAGS, *_FEATURES)


def _gguf_features() -> dict[str, pl.Expr]:
    return mix_features(pl.col("layer").fill_null(0), pl.col("n_layers"), pl.col("attn_v_pos"), pl.col("n_attn_v"),
                        pl.col("n_expert"), pl.col("gqa_ratio"))


def _gguf_bits(mix: str) -> pl.Expr:
    """Bits per element of each row in ``mix``: llama.cpp's type (``formats.gguf_rule_type``), with the fallback
    when a row is not a whole number of blocks (``formats.gguf_row_type``)."""
    kind = gguf_rule_type(mix, pl.col("role"), pl.col, COLUMNS)
    return COLUMNS.lookup(gguf_row_type(kind, pl.col("cols"), COLUMNS), GGML_BPW)


def bits_expr(fmt: str) -> pl.Expr:
    """Bits per element of each tensor row in a non-GGUF ``fmt`` (native, bf16, fp8, ...)."""
    if fmt == "native":
        return _native_bits()
    return pl.when(pl.col("checkpoint_format") == fmt).then(_native_bits()).otherwise(_format_bits(fmt))


def tensor_bits_frame(models: dict[str, Architecture], formats: Iterable[str] = GRID_FORMATS) -> pl.DataFrame:
    """The tensor frame with one ``bits_<format>`` column per format."""
    rows = tensor_frame(models).lazy().join(_model_table(models).lazy(), on="model_id", how="left",
                                            maintain_order="left").with_columns(**_gguf_features())
    mixes = [f for f in formats if f in GGUF_MIXES]
    gguf = rows.select(_GGUF_KEY).unique().select(*_GGUF_KEY, *[_gguf_bits(m).alias(f"bits_{m}") for m in mixes])
    return rows.with_columns(**{f"bits_{f}": bits_expr(f) for f in formats if f not in GGUF_MIXES})\
        .join(gguf, on=list(_GGUF_KEY), how="left", maintain_order="left", nulls_equal=True)\
        .drop(*_gguf_features()).collect(engine="in-memory")


def format_figures(models: dict[str, Architecture], bits: pl.DataFrame | None = None) -> pl.DataFrame:
    """Per model and format: weight bytes and the weight bytes one decode step reads with their
    routed-expert part (:func:`_step_terms`); ``bits``: :func:`tensor_bits_frame` of ``models``, if at hand.

    Sums are taken per group over its rows in tensor order (``list.sum`` of the group's values): polars' parallel
    group-by ``sum`` adds partial sums in whatever order its threads finish, so the last bits of a total could
    change from one run to the next; the grid must not (incremental runs compare against earlier results)."""
    weights = [f"w_{f}" for f in GRID_FORMATS]
    bits = (tensor_bits_frame(models) if bits is None else bits).lazy()
    nbytes = bits.select(
        "model_id", "layer", *[(pl.col("numel") * pl.col(f"bits_{f}") / 8).alias(f"w_{f}") for f in GRID_FORMATS])
    totals = nbytes.group_by("model_id").agg(pl.col(*weights)).with_columns(pl.col(*weights).list.sum())
    wide = totals.join(_step_terms(bits), on="model_id", how="left").collect(engine="in-memory")
    return pl.concat([wide.select("model_id", format=pl.lit(f), weights_bytes=f"w_{f}", step_bytes=f"s_{f}",
                                  expert_step_bytes=f"x_{f}")
                      for f in GRID_FORMATS])


def _step_terms(bits: pl.LazyFrame) -> pl.LazyFrame:
    """Per model: the weight bytes one decode step of one request reads (``s_<format>``) and their routed-expert
    part (``x_<format>``), as ``sizing_core.roofline._step_terms`` adds them, term for term and in its order: the
    dense tensors in tensor order, one token-embedding row, and per routed-expert group (experts, top-k; groups
    in order of first appearance) its bytes x (1 - (1 - k/E)), so that the grid's decode speed is ``decode_step``'s
    to the last bit. Each sum is a group's values gathered in row order and added by ``list.sum``, which adds them
    one after another as Python does (a group-by ``sum`` adds partial sums in any grouping)."""
    embd = pl.col("role") == Role.TOKEN_EMBD.value
    routed = _ROUTED & pl.col("layer").is_not_null()
    kind = pl.when(embd).then(1).when(routed).then(2).otherwise(0)  # dense, embedding row, routed experts
    elements = pl.when(embd).then(pl.col("cols")).otherwise(pl.col("numel"))  # a lookup reads one row
    terms = bits.with_row_index("tensor_row").with_columns(kind=kind, elements=elements)\
        .group_by("model_id", "kind", "n_exp", "top_k")\
        .agg(pl.col("tensor_row").first(),
             *[(pl.col("elements") * pl.col(f"bits_{f}") / 8).alias(f"t_{f}") for f in GRID_FORMATS])\
        .with_columns(pl.col(f"t_{f}").list.sum() for f in GRID_FORMATS)
    dense = terms.filter(pl.col("kind") == 0).select("model_id", *[pl.col(f"t_{f}").alias(f"d_{f}")
                                                                   for f in GRID_FORMATS])
    row = terms.filter(pl.col("kind") == 1).select("model_id", *[pl.col(f"t_{f}").alias(f"r_{f}")
                                                                 for f in GRID_FORMATS])
    experts = terms.filter(pl.col("kind") == 2).sort("model_id", "tensor_row")\
        .group_by("model_id", maintain_order=True)\
        .agg(*[(pl.col(f"t_{f}") * (1 - (1 - pl.col("top_k") / pl.col("n_exp")))).alias(f"x_{f}")
               for f in GRID_FORMATS])\
        .with_columns(pl.col(f"x_{f}").list.sum() for f in GRID_FORMATS)
    out = bits.select("model_id").unique().join(dense, on="model_id", how="left")\
        .join(row, on="model_id", how="left").join(experts, on="model_id", how="left")
    return out.select("model_id", *[(pl.col(f"d_{f}").fill_null(0.0) + 1 * pl.col(f"r_{f}").fill_null(0.0)
                                     + pl.col(f"x_{f}").fill_null(0.0)).alias(f"s_{f}") for f in GRID_FORMATS],
                      *[pl.col(f"x_{f}").fill_null(0.0) for f in GRID_FORMATS])


