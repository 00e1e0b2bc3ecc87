"""FROZEN REFERENCE for tests/test_grid.py: the sizing grid as it was before the columnar rewrite, one
Python call per tensor per format and one ``Engine.supports`` call per cell. Kept only to prove the fast grid in
``pipeline/compute/grid.py`` gives the same table; not used by the pipeline. Do not optimise it.

The original docstring follows.

The sizing grid: model x format x context x GPU x engine, computed column-wise with polars.

sizing_core gives small per-model figures (weights, largest layer and active bytes per format; KV cache and state
per context and tensor-parallel size); polars crosses them with the GPU x engine table and derives memory, fit,
GPU-count and decode-speed columns for every cell at once, instead of calling the planner per row. The GPU count
here is the planner's rule in closed form (TP inside a node up to the largest valid size, then whole nodes of
pipeline stages; layer split by whole layers for llama.cpp/MLX); the exact plan of the cells the exports show
comes from ``sizing_core.placement.search`` and ``tests/test_grid.py`` checks that the two agree.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from sizing_core import Architecture
from sizing_core.engines import effective_format, engines_on
from sizing_core.formats import WEIGHT_FORMATS, tensor_bits
from sizing_core.gpus import GPU
from sizing_core.kv_cache import kv_bytes_per_request, state_bytes_per_request
from sizing_core.layers import MoE
from sizing_core.placement.search import MAX_GPUS, valid_tensor_parallel
from sizing_core.throughput import DISCRETE_BANDWIDTH_EFFICIENCY, UNIFIED_BANDWIDTH_EFFICIENCY
from sizing_core.units import GB, GIB

GRID_FORMATS = ("native", *(f for f in WEIGHT_FORMATS if f != "fp16"))
GRID_CONTEXTS = (4096, 8192, 32768, 131072, 1048576)
TPS = (1, 2, 4, 8)


def model_figures(model_id: str, revision: str, arch: Architecture) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(per format: weight/largest-layer/active bytes; per context and TP: KV and state bytes) for one model."""
    fmt_rows = []
    for fmt in GRID_FORMATS:
        if fmt == "native" and arch.native.unsupported:
            continue  # unknown checkpoint scheme: no native cells (no native format)
        bits = tensor_bits(arch, fmt)
        per_layer = [0.0] * arch.num_layers
        total = active = 0.0
        for t, b in zip(arch.tensors, bits, strict=True):
            nbytes = t.numel * b / 8
            total += nbytes
            share = 1.0
            if t.is_routed_expert and t.layer is not None:
                mlp = arch.layers[t.layer].mlp
                assert isinstance(mlp, MoE)
                share = mlp.top_k / mlp.num_experts
            if t.role != "token_embd":
                active += nbytes * share
            if t.layer is not None:
                per_layer[t.layer] += nbytes
        fmt_rows.append({"format": fmt, "stored_format": effective_format(arch, fmt), "weights_bytes": float(total),
                         "max_layer_bytes": float(max(per_layer)), "active_bytes": float(active)})
    valid = [t for t in TPS if valid_tensor_parallel(arch, t)]
    ctx_rows = []
    for context in GRID_CONTEXTS:
        capped = arch.max_context is not None and context > arch.max_context
        for tp in TPS:
            ctx_rows.append({"context": context, "tp": tp, "tp_valid": tp in valid, "above_max_context": capped,
                             "kv_bytes": float(kv_bytes_per_request(arch, context, "bf16", tp)),
                             "state_bytes": float(state_bytes_per_request(arch, tp))})
    meta = {"model_id": model_id, "revision": revision, "num_layers": arch.num_layers}
    formats = pl.DataFrame(fmt_rows).with_columns(**{k: pl.lit(v) for k, v in meta.items()})
    contexts = pl.DataFrame(ctx_rows).with_columns(model_id=pl.lit(model_id))
    return formats, contexts


def gpu_table(gpus: Iterable[GPU]) -> pl.DataFrame:
    """GPU x engine rows: usable memory, machine size, effective bandwidth."""
    rows = []
    for gpu in gpus:
        for engine in engines_on(gpu):
            engine_id = engine.id
            rows.append({"gpu_id": gpu.id, "engine": engine_id, "gpu_kind": gpu.kind,
                         "usable_bytes": float(engine.usable_bytes(gpu)), "node_size": gpu.node_size,
                         "tensor_parallel": engine.tensor_parallel,
                         "bandwidth": float(gpu.bandwidth_gbs or 0) * GB * (
                             UNIFIED_BANDWIDTH_EFFICIENCY if gpu.kind in ("apple", "unified")
                             else DISCRETE_BANDWIDTH_EFFICIENCY)})
    return pl.DataFrame(rows)


def support_table(gpus: Iterable[GPU], models: dict[str, Architecture]) -> pl.DataFrame:
    rows = []
    for gpu in gpus:
        for engine in engines_on(gpu):
            engine_id = engine.id
            for model_id, arch in models.items():
                activation = engine.activation_bytes(arch, 1, gpu)
                for fmt in GRID_FORMATS:
                    s = engine.supports(gpu, fmt, arch)
                    rows.append({"gpu_id": gpu.id, "engine": engine_id, "model_id": model_id, "format": fmt,
                                 "runs": s.runs, "native_support": s.native, "activation_bytes": float(activation)})
    return pl.DataFrame(rows)


def compute_grid(models: dict[str, tuple[str, Architecture]], gpus: list[GPU]) -> pl.DataFrame:
    """All cells for ``models`` (id -> (revision, architecture)) on ``gpus``."""
    if not models:
        return pl.DataFrame()
    archs = {k: v[1] for k, v in models.items()}
    figures = [model_figures(mid, rev, arch) for mid, (rev, arch) in models.items()]
    formats = pl.concat([f for f, _ in figures])
    contexts = pl.concat([c for _, c in figures])
    hw = gpu_table(gpus)
    support = support_table(gpus, archs)
    one = contexts.filter(pl.col("tp") == 1).select("model_id", "context", "above_max_context",
                                                    kv1="kv_bytes", state1="state_bytes")
    best_tp = contexts.filter(pl.col("tp_valid") & (pl.col("tp") <= 8)).group_by("model_id", "context").agg(
        max_tp=pl.col("tp").max(),
        kv_max_tp=pl.col("kv_bytes").sort_by("tp").last(), state_max_tp=pl.col("state_bytes").sort_by("tp").last())
    cells = (formats.join(one, on="model_id").join(best_tp, on=["model_id", "context"])
             .join(hw, how="cross").join(support, on=["gpu_id", "engine", "model_id", "format"]))
    budget = pl.col("usable_bytes") - pl.col("activation_bytes")
    single = pl.col("weights_bytes") + pl.col("kv1") + pl.col("state1")
    tp_cap = pl.min_horizontal(pl.col("max_tp"), pl.col("node_size"))  # (max_tp is the largest valid TP <= 8)
    layers = pl.col("num_layers")
    # whole layers per GPU: a stage holds floor(budget / per-layer load) layers (largest layer, cache spread)
    per_device = (budget / (pl.col("max_layer_bytes") + (pl.col("kv1") + pl.col("state1")) / layers)).floor()
    split_gpus = pl.when(single <= budget).then(1).when(per_device >= 1).then(
        pl.max_horizontal((single / budget).ceil(), (layers / per_device).ceil())).otherwise(None)
    # tensor-parallel engines: inside one machine any TP x PP = n works (TP 1 x PP n at worst), so the split
    # count stands while it fits a machine; beyond, TP takes the whole machine and PP counts machines
    per_stage = (budget / ((pl.col("max_layer_bytes") / tp_cap) + (pl.col("kv_max_tp") + pl.col("state_max_tp"))
                           / layers)).floor()
    node_load = pl.col("weights_bytes") / tp_cap + pl.col("kv_max_tp") + pl.col("state_max_tp")
    stages = pl.max_horizontal((node_load / budget).ceil(), (layers / per_stage).ceil())
    tp_gpus = pl.when(split_gpus <= pl.col("node_size")).then(split_gpus).otherwise(tp_cap * stages)
    gpus_col = pl.when(pl.col("tensor_parallel")).then(tp_gpus).otherwise(split_gpus)
    fits_a_layer = pl.when(pl.col("tensor_parallel")).then(per_stage >= 1).otherwise(per_device >= 1)
    feasible = pl.col("runs") & ~pl.col("above_max_context") & (budget > 0) & fits_a_layer
    cells = cells.with_columns(
        single_gpu_gib=(single + pl.col("activation_bytes")) / GIB,
        usable_gib=pl.col("usable_bytes") / GIB,
        fits_single=feasible & (single <= budget),
        est_gpus=pl.when(feasible & (gpus_col <= MAX_GPUS)).then(gpus_col).otherwise(None).cast(pl.Int64),
    )
    decode = pl.col("bandwidth") / (pl.col("active_bytes") / pl.when(pl.col("tensor_parallel"))
                                    .then(pl.min_horizontal(pl.col("est_gpus"), tp_cap)).otherwise(1)
                                    + pl.col("kv1"))
    cells = cells.with_columns(
        decode_tokens_per_s=pl.when(pl.col("est_gpus").is_not_null() & (pl.col("bandwidth") > 0))
        .then(decode).otherwise(None),
        weights_gib=pl.col("weights_bytes") / GIB, kv_gib=pl.col("kv1") / GIB, state_gib=pl.col("state1") / GIB)
    return cells.select(
        "model_id", "revision", "format", "stored_format", "context", "gpu_id", "gpu_kind", "engine", "runs",
        "native_support", "above_max_context", "weights_gib", "kv_gib", "state_gib", "single_gpu_gib", "usable_gib",
        "fits_single", "est_gpus", "decode_tokens_per_s").sort("model_id", "format", "context", "gpu_id", "engine")
