"""The sizing grid: model x format x context x GPU x engine, computed column-wise with polars.

How the work is laid out (no Python call per cell; none per tensor per format but the GPU count's):

1. **Tensors -> bytes per format.** Every tensor group of every model is one row of a polars frame (role, row
   length, element count, layer, expert group, exclusion flags). Bits per element for each format are columnar
   expressions that follow ``sizing_core.formats`` (``_scheme_bits`` for FP8/INT8/NVFP4/MXFP4/AWQ and the
   checkpoint's native scheme, llama.cpp's ``llama_tensor_get_type`` promotions plus the row-length fallback for
   GGUF mixes); totals and the decode step's bytes are group-bys, summed in tensor order so the grid is
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

The GPU count and its TP are the planner's: ``sizing_core.placement.fewest.fewest_layout`` on columns, fed the planner's
stage counts (``pipeline/compute/grid_plan.py``); ``tests/test_grid.py`` compares every cell with
``placement.fewest_gpus``. Those counts read the planner's per-layer loads: its weight loads summed from step 1's
bits (``placement.remember_weight_loads``, not ``tensor_bits`` per tensor again), then per model, format, context,
TP and repacking class the planner's per-GPU layer bytes in Python; with the cells, most of the grid's time
(``docs/benchmarks.md``).

The decode speed on that plan is sizing_core's own function called on columns (``engines.speed.decode_ms``;
``pipeline/compute/columns.py``), fed the terms
``decode_step`` adds, in its order (the step's weight bytes per kind from ``grid_bytes._step_terms``, the request's
cache per layer, the fixed floor per model and engine, the compute term): on the planner's plan the grid's decode
speed is ``decode_step``'s to the last bit on every cell (``tests/test_grid_decode.py``).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

import polars as pl

from pipeline.compute.columns import COLUMNS
from pipeline.compute.grid_bytes import (
    GRID_FORMATS,
    format_figures,
    tensor_bits_frame,
)
from pipeline.compute.grid_plan import PlanTables, plan_columns, plan_exprs, plan_tables
from sizing_core import Architecture
from sizing_core.engines import ENGINES, effective_format, engines_on
from sizing_core.engines.speed import (
    ALLREDUCE_US,
    PREFILL_MFU,
    _fixed_floor,
    _peak,
    bandwidth_efficiency,
    decode_compute_ms,
    decode_ms,
    family,
    link,
)
from sizing_core.gpus import GPU
from sizing_core.kv_cache import cache_bytes
from sizing_core.placement.search import remember_weight_loads, valid_tensor_parallel
from sizing_core.roofline import _active_params, _attention_flops_per_token
from sizing_core.units import GB, GIB

GRID_CONTEXTS = (4096, 8192, 32768, 131072, 1048576)
TPS = (1, 2, 4, 8)


_MODULES = tuple(Path(__file__).resolve().parent / name for name in ("grid_bytes.py", "grid_plan.py"))


@lru_cache(maxsize=1)
def grid_version() -> str:
    """The code a sizing row depends on besides its model revision and GPU row: the sizing library and planner
    (``placement_cache.sizing_version``), this module, ``grid_bytes.py`` and ``grid_plan.py``. Stored per row
    (``sizing.sizing_version``) so a changed rule re-sizes every model on the next run instead of leaving the old
    figures in place."""
    from pipeline.compute.placement_cache import sizing_version

    code = Path(__file__).read_bytes() + b"".join(m.read_bytes() for m in _MODULES)
    return hashlib.sha256((sizing_version() + hashlib.sha256(code).hexdigest()).encode()).hexdigest()[:16]


# ------------------------------------------------------------------------------------------------- small tables


def _mixer_key(mixer: object) -> object:
    """Equal mixers (the same attention or SSM configuration on many layers) share one key; an unhashable one
    keys by identity."""
    try:
        hash(mixer)
    except TypeError:
        return id(mixer)
    return mixer


def _cache_sums(arch: Architecture, tps: tuple[int, ...]) -> tuple[list[list[float]], list[float], list[list[float]]]:
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
    # a request's cache as the speed model adds it (roofline._cache_bytes_per_request): KV + state per layer, in
    # layer order; without state that is the KV sum itself (each term + 0.0 is the term)
    request = [[sum([by_mixer[i] + st[i] for i in order]) for by_mixer in per_tp] if any(st) else per_kv
               for per_tp, st, per_kv in zip(kv_by_mixer, state_by_mixer, kv, strict=True)]
    return kv, state, request


def context_table(models: dict[str, Architecture]) -> pl.DataFrame:
    """Per model and context: KV and state at TP 1; the cache one GPU reads per
    decode step at each valid TP (``cache_tp{t}``: KV and state, null where t is not valid); the layer counts the
    engine's fixed step costs follow (MoE and latent-attention layers)."""
    cache_cols = [f"cache_tp{t}" for t in TPS]
    cols: dict[str, list] = {k: [] for k in ("model_id", "context", "above_max_context", "kv1", "state1",
                                             "per_token_flops",
                                             *cache_cols)}
    for model_id, arch in models.items():
        valid = tuple(t for t in TPS if valid_tensor_parallel(arch, t))
        if not valid:
            continue
        kv, state, request = _cache_sums(arch, valid)
        at = dict(zip(valid, range(len(valid)), strict=True))
        kv1, state1 = kv[at[1]] if 1 in at else kv[0], state[at[1]] if 1 in at else state[0]
        n = len(GRID_CONTEXTS)
        cols["model_id"].extend([model_id] * n)
        cols["context"].extend(GRID_CONTEXTS)
        cols["above_max_context"].extend([arch.max_context is not None and c > arch.max_context
                                          for c in GRID_CONTEXTS])
        cols["kv1"].extend(kv1)
        cols["state1"].extend([state1] * n)
        # a decode step's FLOPs per token at each context (engines.speed.decode_step's compute term)
        cols["per_token_flops"].extend([2 * _active_params(arch) + _attention_flops_per_token(arch, 2 * c)
                                        for c in GRID_CONTEXTS])
        for t, name in zip(TPS, cache_cols, strict=True):
            cols[name].extend(request[at[t]] if t in at else [None] * n)
    return pl.DataFrame(cols, schema={"model_id": pl.String, "context": pl.Int64, "above_max_context": pl.Boolean,
                                      "kv1": pl.Float64, "state1": pl.Float64,
                                      "per_token_flops": pl.Float64,
                                      **{name: pl.Float64 for name in cache_cols}})


def gpu_table(gpus: Iterable[GPU]) -> pl.DataFrame:
    """GPU x engine rows: usable memory, machine size, effective bandwidth and the decode step's fixed costs as the
    engine model has them (``sizing_core.engines.speed``: per-layer, per-MoE-layer and per-latent-layer costs in
    microseconds; one all-reduce on the link a TP group of 2, 4 or 8 of these GPUs uses)."""
    rows = []
    for gpu in gpus:
        for engine in engines_on(gpu):
            rows.append({"gpu_id": gpu.id, "engine": engine.id, "gpu_kind": gpu.kind,
                         "usable_bytes": float(engine.usable_bytes(gpu)), "node_size": gpu.node_size,
                         "tensor_parallel": engine.tensor_parallel,
                         "bandwidth": float(gpu.bandwidth_gbs or 0) * GB * bandwidth_efficiency(engine, gpu),
                         **{f"allreduce_tp{t}": ALLREDUCE_US[link(gpu, t)] for t in TPS[1:]}})
    return pl.DataFrame(rows, schema={"gpu_id": pl.String, "engine": pl.String, "gpu_kind": pl.String,
                                      "usable_bytes": pl.Float64, "node_size": pl.Int64,
                                      "tensor_parallel": pl.Boolean, "bandwidth": pl.Float64,
                                      **{f"allreduce_tp{t}": pl.Float64 for t in TPS[1:]}})


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
    # support verdicts, once per (GPU, engine, support class); activation peaks, once per (model, GPU x engine)
    classes: dict[tuple[str, str | None, bool, bool], int] = {}
    class_arch: dict[tuple[str, str | None, bool, bool], Architecture] = {}
    mf: dict[str, list] = {k: [] for k in ("model_id", "format", "revision", "stored_format", "num_layers",
                                           "support_idx")}
    for model_id, arch in archs.items():
        moe = arch.is_moe
        formats = [f for f in GRID_FORMATS if not (f == "native" and arch.native.unsupported)]
        # (an unknown checkpoint scheme has no native cells)
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
    runs, native, peak = [], [], []
    hw_pairs = [(gpu_by_id[gpu_id], ENGINES[engine_id])
                for gpu_id, engine_id in hw.select("gpu_id", "engine").iter_rows()]
    for (fmt, _, _, _), arch in class_arch.items():
        for gpu, engine in hw_pairs:
            s = engine.supports(gpu, fmt, arch)
            runs.append(s.runs)
            native.append(s.native)
            flops = _peak(gpu, effective_format(arch, fmt), s.native, engine)  # decode_step's compute term
            # no figure: an infinite peak, so the compute term is 0.0 as decode_step has it
            peak.append(flops * PREFILL_MFU[family(engine)] if flops else math.inf)
    engine_ids = sorted({e for e in hw["engine"]})
    engine_idx = {e: i for i, e in enumerate(engine_ids)}
    model_ids = sorted(archs)
    # the activation peak follows the engine's defaults on each GPU (vLLM: sequences and batched tokens by memory)
    activation = [float(engine.activation_bytes(archs[m], 1, gpu)) for m in model_ids for gpu, engine in hw_pairs]
    # a decode step's fixed costs at TP 1 and one stage (engines.speed._fixed_floor), per (model, GPU x engine)
    floors = []
    for m in model_ids:
        by_engine = {e: _fixed_floor(archs[m], ENGINES[e]) for e in engine_ids}
        floors.extend(by_engine[engine.id] for _, engine in hw_pairs)

    bits = tensor_bits_frame(archs)
    _give_planner_bits(archs, bits, mf["model_id"], mf["format"])
    mf = pl.DataFrame(mf, schema={"model_id": pl.String, "format": pl.String, "revision": pl.String,
                                  "stored_format": pl.String, "num_layers": pl.Int64, "support_idx": pl.Int64})\
        .join(format_figures(archs, bits), on=["model_id", "format"])
    mf = mf.with_columns(model_idx=pl.col("model_id").replace_strict({m: i for i, m in enumerate(model_ids)},
                                                                      return_dtype=pl.Int64))
    mfc = mf.join(context_table(archs), on="model_id").sort("model_id", "format", "context")
    stored_formats = sorted(set(mfc["stored_format"]))
    mfc = mfc.with_row_index("mfc_idx").with_columns(
        mfc_idx=pl.col("mfc_idx").cast(pl.Int64),
        mf_idx=(pl.struct("model_id", "format").rank("dense") - 1).cast(pl.Int64),
        stored_idx=pl.col("stored_format").replace_strict({f: i for i, f in enumerate(stored_formats)},
                                                          return_dtype=pl.Int64))
    plans = plan_tables(archs, model_ids, list(mfc.select("model_id", "format", "stored_format", "context")
                                               .iter_rows()), hw_pairs, stored_formats)
    hw = hw.with_columns(engine_idx=pl.col("engine").replace_strict(engine_idx, return_dtype=pl.Int64))
    lookups = _Lookups(runs=pl.Series(runs, dtype=pl.Boolean), native=pl.Series(native, dtype=pl.Boolean),
                       activation=pl.Series(activation, dtype=pl.Float64), n_hw=n_hw, n_engines=len(engine_ids),
                       peak=pl.Series(peak, dtype=pl.Float64), fixed_floor=pl.Series(floors, dtype=pl.Float64))
    return _cells(mfc, hw, lookups, plans)


def _give_planner_bits(archs: dict[str, Architecture], bits: pl.DataFrame, model_ids: list[str],
                       formats: list[str]) -> None:
    """The planner's weight loads of every (model, format) cell row, summed from the tensor frame's bits (equal to
    ``tensor_bits``'s: ``tests/test_grid.py``) rather than from ``tensor_bits`` called per tensor again."""
    by_model = bits.partition_by("model_id", as_dict=True, maintain_order=True)
    for model_id, fmt in zip(model_ids, formats, strict=True):
        remember_weight_loads(archs[model_id], fmt, by_model[(model_id,)][f"bits_{fmt}"].to_list())


class _Lookups(NamedTuple):
    """Per-cell look-ups by integer index: support verdicts by (support class, GPU x engine row), activation peaks
    by (model, GPU x engine row)."""

    runs: pl.Series
    native: pl.Series
    activation: pl.Series
    n_hw: int
    n_engines: int
    peak: pl.Series  # peak FLOPS x the engine's MFU, by (support class, GPU x engine row); inf: no figure
    fixed_floor: pl.Series  # ms, by (model, GPU x engine row)


def _cells(mfc: pl.DataFrame, hw: pl.DataFrame, lookups: _Lookups, plans: PlanTables) -> pl.DataFrame:
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
        "weights_bytes", "kv1", *[f"cache_tp{t}" for t in TPS],
        "step_bytes", "expert_step_bytes", "per_token_flops", "mfc_idx", "mf_idx", "stored_idx", layers="num_layers",
        single=pl.col("weights_bytes") + pl.col("kv1") + pl.col("state1"),
        weights_gib=pl.col("weights_bytes") / gib, kv_gib=pl.col("kv1") / gib, state_gib=pl.col("state1") / gib)
    right = hw.lazy().select("hw_idx", "gpu_id", "gpu_kind", "engine", "engine_idx", "usable_bytes", "node_size",
                             "tensor_parallel", "bandwidth", *[f"allreduce_tp{t}" for t in TPS[1:]],
                             usable_gib=pl.col("usable_bytes") / gib)
    support = pl.col("support_idx") * lookups.n_hw + pl.col("hw_idx")
    cells = left.join(right, how="cross", maintain_order="left_right").with_columns(
        runs=pl.lit(lookups.runs).gather(support), native_support=pl.lit(lookups.native).gather(support),
        activation_bytes=pl.lit(lookups.activation).gather(pl.col("model_idx") * lookups.n_hw + pl.col("hw_idx")),
        fixed_floor=pl.lit(lookups.fixed_floor).gather(pl.col("model_idx") * lookups.n_hw + pl.col("hw_idx")),
        peak=pl.lit(lookups.peak).gather(support)).with_columns(**plan_columns(plans))
    gpus, tp = plan_exprs(plans)
    cells = cells.with_columns(planned=gpus.cast(pl.Int64), plan_tp=tp.cast(pl.Int64))
    cells = cells.with_columns(est_gpus=pl.when(pl.col("runs") & ~pl.col("above_max_context"))
                               .then(pl.col("planned")).otherwise(None))
    est_gpus, single = pl.col("est_gpus"), pl.col("single")
    decode = _decode_tokens_per_s(pl.col("plan_tp"), est_gpus // pl.col("plan_tp"))
    return cells.select(
        "model_id", "revision", "format", "stored_format", "context", "gpu_id", "gpu_kind", "engine", "runs",
        "native_support", "above_max_context", "weights_gib", "kv_gib", "state_gib",
        single_gpu_gib=(single + pl.col("activation_bytes")) / gib, usable_gib="usable_gib",
        fits_single=(est_gpus == 1).fill_null(False), est_gpus=est_gpus,
        decode_tokens_per_s=pl.when(est_gpus.is_not_null() & (pl.col("bandwidth") > 0)).then(decode)
        .otherwise(None)).collect(engine="streaming")


def _decode_tokens_per_s(tp: pl.Expr, pp: pl.Expr) -> pl.Expr:
    """One request's decode speed on the plan: ``sizing_core.engines.speed.decode_ms`` on columns, fed what
    ``decode_step`` feeds it (the step's weight bytes and their routed-expert part, the request's cache on one GPU
    of the TP group, the engine's share of the bandwidth, the fixed costs at TP 1, the all-reduce of the link, the
    compute term), so the figure is ``1000 / decode_step(...).total_ms`` of the same plan."""
    def by_tp(prefix: str, otherwise: pl.Expr) -> pl.Expr:
        expr = otherwise
        for t in TPS:
            if t > 1 or prefix == "cache_tp":
                expr = pl.when(tp == t).then(pl.col(f"{prefix}{t}")).otherwise(expr)
        return expr

    compute = decode_compute_ms(pl.col("per_token_flops"), tp, pl.col("peak"))
    _, _, total = decode_ms(pl.col("step_bytes"), pl.col("expert_step_bytes"), by_tp("cache_tp", pl.lit(None)),
                            tp, pp, pl.col("bandwidth"), pl.col("fixed_floor"), by_tp("allreduce_tp", pl.lit(0.0)),
                            pl.col("layers"), compute, ops=COLUMNS)
    return 1000 / total
