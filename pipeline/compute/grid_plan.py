"""The grid's fewest GPUs and their TP: the planner's own rule on columns.

``sizing_core.placement.fewest.fewest_layout`` is the planner's search from stage counts; the grid calls it with columns.
Its inputs per cell are gathers from tables built here with the planner's own functions:

- per (model, format, context, TP, repacking class) the stage loads of one GPU (``PlanSearch.layer_bytes``,
  ``stage_extras``, ``stages.stage_loads``): their sum with one stage's extras, and with several stages' (the tied
  embedding copy); none above the model's maximum context or for a TP that does not split it (no cell reads them);
- per (model, GPU x engine, TP) the budget after the engine's working memory, and the lower bound's budget;
- per (group, budget) the stage count: 1 where the budget holds the group's sum, infinite where a layer alone is
  above it, the bound where the count's lower and upper bounds meet, else the greedy split folded over the layers
  (``stages.scan_step``). Groups with the same loads and budgets share their rows.

So the count and TP of every cell are the planner's (``tests/test_grid.py`` compares every cell).
"""

from __future__ import annotations

import math
from functools import reduce
from operator import add
from typing import Any, NamedTuple

import polars as pl

from pipeline.compute.columns import COLUMNS
from sizing_core import Architecture
from sizing_core.engines import Engine
from sizing_core.gpus import GPU
from sizing_core.placement.fewest import fewest_layout, lower_bound
from sizing_core.placement.search import (
    MAX_GPUS,
    PlanSearch,
    lower_bound_budget,
    valid_tensor_parallel,
    weight_total,
)
from sizing_core.placement.stages import Scan, scan_result, scan_start, scan_step, stage_loads

TPS = (1, 2, 4, 8)


class PlanTables(NamedTuple):
    """Look-ups by integer index (see :func:`plan_exprs` for the index of each)."""

    budget: dict[int, pl.Series]  # per TP, by (model, GPU x engine row)
    lower_budget: pl.Series  # by (model, GPU x engine row)
    total: pl.Series  # weight bytes, by (model, format) row of the cells' left side
    one: pl.Series  # one stage's bytes, by group
    stages: pl.Series  # stage count, by (group, budget) row
    cap_index: dict[int, pl.Series]  # per TP, by (model, GPU x engine row): the budget's index among the model's
    group_start: pl.Series  # first group of each (model, format, context) row
    group_base: pl.Series  # first (group, budget) row of each group (groups of the same loads share theirs)
    n_class: pl.Series  # repacking classes per stored format
    repack_class: pl.Series  # by (stored format, GPU x engine row): its class among its stored format's
    n_hw: int
    max_node: int


def _repack_key(gpu: GPU, engine: Engine, stored: str) -> tuple | None:
    """What the planner's per-layer repacking reads from the GPU and engine (``PlanSearch._repack``)."""
    return (gpu.is_nvidia, bool(gpu.supports_mxfp4), engine.id) if engine.repacks(stored) else None


def _uses(gpu: GPU, engine: Engine, t: int) -> bool:
    """Whether the search may ask a stage count at TP ``t`` on this GPU and engine."""
    return t == 1 or (engine.tensor_parallel and t <= gpu.node_size)


def plan_tables(archs: dict[str, Architecture], model_ids: list[str], left: list[tuple[str, str, str, int]],
                hw_pairs: list[tuple[GPU, Engine]], stored_formats: list[str]) -> PlanTables:
    """``left``: the cells' (model, format, stored format, context) rows in order; ``hw_pairs``: the GPU x engine
    rows in order; ``model_ids``: the models in index order; ``stored_formats``: the stored formats in index order."""
    n_hw = len(hw_pairs)
    classes, n_class = [], []
    reps: dict[str, list[tuple[GPU, Engine] | None]] = {}  # per stored format, per class: a GPU x engine of it
    for s in stored_formats:
        keys: dict[tuple | None, int] = {}
        reps[s] = []
        for gpu, engine in hw_pairs:
            key = _repack_key(gpu, engine, s)
            if key not in keys:
                keys[key] = len(keys)
                reps[s].append((gpu, engine))
            classes.append(keys[key])
        n_class.append(len(keys))
    budget = {t: [] for t in TPS}
    caps: dict[tuple[int, int], list[float]] = {}  # (model index, TP) -> distinct budgets the search may ask
    cap_index = {t: [] for t in TPS}
    lower_budget = []
    # the memory an engine leaves on a GPU at TP t does not depend on the model (None: TP t not asked there)
    usable = {t: [engine.usable_bytes(gpu, t) if _uses(gpu, engine, t) else None for gpu, engine in hw_pairs]
              for t in TPS}
    for m_idx, model_id in enumerate(model_ids):
        arch = archs[model_id]
        lower_budget.extend(lower_bound_budget(arch, gpu, engine) for gpu, engine in hw_pairs)
        for t in TPS:
            splits = valid_tensor_parallel(arch, t)  # else no cell reads TP t (``valid{t}``)
            values = [u - engine.activation_bytes(arch, t, gpu) if splits and u is not None else 0.0
                      for u, (gpu, engine) in zip(usable[t], hw_pairs, strict=True)]
            distinct = sorted({v for v, u in zip(values, usable[t], strict=True) if u is not None}) or [0.0]
            at = {v: i for i, v in enumerate(distinct)}
            caps[(m_idx, t)] = distinct
            budget[t].extend(values)
            cap_index[t].extend(at.get(v, 0) for v in values)
    m_index = {m: i for i, m in enumerate(model_ids)}
    one, group_start, group_base, totals, group_loads, group_total = [], [], [], [], [], []
    group_caps: list[int] = []  # per group: its (model, TP) in ``caps``' order
    cap_keys = {key: i for i, key in enumerate(caps)}
    n_rows = 0
    shared: dict[tuple[tuple[float, ...], int], int] = {}  # (loads, budgets) -> their first (group, budget) row
    searches: dict[tuple[str, str, int], PlanSearch] = {}
    seen_mf: dict[tuple[str, str], int] = {}
    for model_id, fmt, stored, context in left:
        arch = archs[model_id]
        if (model_id, fmt) not in seen_mf:
            seen_mf[(model_id, fmt)] = len(totals)
            totals.append(weight_total(arch, fmt))
        # no cell above the model's maximum context has a count (``est_gpus``), none reads a TP that does not split
        # the model: those groups are left empty (never one stage, infinitely many)
        above = arch.max_context is not None and context > arch.max_context
        search = None if above else searches.setdefault((model_id, fmt, context), PlanSearch(arch, fmt, context))
        group_start.append(len(one))
        for t in TPS:
            key = (m_index[model_id], t)
            distinct = caps[key]
            used = search is not None and valid_tensor_parallel(arch, t)
            if used:
                first, last = search.stage_extras(t, False)
                _, last_several = search.stage_extras(t, True)
            for gpu, engine in reps[stored]:
                if used:
                    layer_bytes = search.layer_bytes(gpu, engine, t)
                    loads = stage_loads(layer_bytes, first, last)
                    one.append(_running_sum(loads))
                    total = one[-1]
                    if last_several != last:  # the tied embedding's copy
                        loads = stage_loads(layer_bytes, first, last_several)
                        total = _running_sum(loads)
                else:
                    one.append(math.inf)
                    loads, total = [math.inf], math.inf
                # the counts read only the loads and the budgets: groups that have both the same (formats of the
                # same bytes, the empty groups of a model) share their (group, budget) rows
                shape = (tuple(loads), cap_keys[key])
                base = shared.get(shape)
                if base is None:
                    base = shared[shape] = n_rows
                    group_caps.append(cap_keys[key])
                    group_loads.append(loads)
                    group_total.append(total)
                    n_rows += len(distinct)
                group_base.append(base)
    cap_rows = pl.DataFrame({"caps": pl.Series([cap_keys[key] for key, v in caps.items() for _ in v], dtype=pl.Int64),
                             "cap": pl.Series([c for v in caps.values() for c in v], dtype=pl.Float64)})
    stages = _stage_counts(group_loads, group_total, group_caps, cap_rows)
    return PlanTables(budget={t: pl.Series(v, dtype=pl.Float64) for t, v in budget.items()},
                      lower_budget=pl.Series(lower_budget, dtype=pl.Float64),
                      total=pl.Series(totals, dtype=pl.Float64), one=pl.Series(one, dtype=pl.Float64),
                      stages=stages, cap_index={t: pl.Series(v, dtype=pl.Int64) for t, v in cap_index.items()},
                      group_start=pl.Series(group_start, dtype=pl.Int64),
                      group_base=pl.Series(group_base, dtype=pl.Int64), n_class=pl.Series(n_class, dtype=pl.Int64),
                      repack_class=pl.Series(classes, dtype=pl.Int64), n_hw=n_hw,
                      max_node=max(gpu.node_size for gpu, _ in hw_pairs))


def _running_sum(loads: list[float]) -> float:
    """The loads added one after another, left to right (the greedy split's one stage)."""
    return reduce(add, loads, 0.0)


#: the bounds' relative margin (see :func:`_stage_counts`)
_MARGIN = 1e-9


def _stage_counts(group_loads: list[list[float]], group_total: list[float], group_caps: list[int],
                  cap_rows: pl.DataFrame) -> pl.Series:
    """The stage count of every (group, budget) row: 1 where the budget holds the group's running sum, infinite
    where one of its layers alone is above it, the bound where the count's lower and upper bounds meet, else the
    greedy split folded over the layers (the rows of groups of one layer count together). ``group_total``: each
    group's running sum; ``group_caps``: each group's budgets, the rows of ``cap_rows`` (``caps``, ``cap``) of that
    key, in order."""
    groups = pl.DataFrame({"group": pl.Series(range(len(group_loads)), dtype=pl.Int64),
                           "caps": pl.Series(group_caps, dtype=pl.Int64),
                           "total": pl.Series(group_total, dtype=pl.Float64),
                           "largest": pl.Series([max(loads) for loads in group_loads], dtype=pl.Float64),
                           "length": pl.Series([len(loads) for loads in group_loads], dtype=pl.Int64)})
    rows = groups.join(cap_rows, on="caps", maintain_order="left_right").drop("caps").with_row_index("row")
    total, cap, largest = pl.col("total"), pl.col("cap"), pl.col("largest")
    # Bounds of the greedy count g: every stage holds at most the cap, so g >= total / cap; every stage but the last
    # was closed by a layer that did not fit, so it holds more than cap - largest and g - 1 < total / (cap - largest).
    # Each is taken with a relative margin far above the rounding of the running sums (n layers: ~n x 2^-53), so a
    # row is decided only where both bounds, widened, agree.
    low = (total * (1 - _MARGIN) / cap).ceil()
    room = cap * (1 - _MARGIN) - largest
    high = pl.when(room > 0).then((total * (1 + _MARGIN) / room).floor() + 1)
    rows = rows.with_columns(n=pl.when(total <= cap).then(1.0).when(largest > cap).then(math.inf)
                             .when(low == high).then(low).otherwise(None))
    counted = [rows.filter(pl.col("n").is_not_null()).select("row", "n")]
    open_rows = rows.filter(pl.col("n").is_null())
    for (n,), part in open_rows.group_by("length"):
        members = sorted(set(part["group"].to_list()))
        local = {g: i for i, g in enumerate(members)}
        layer = [pl.Series([group_loads[g][k] for g in members], dtype=pl.Float64) for k in range(n)]
        frame = part.lazy().select("row", "cap",
                                   member=pl.col("group").replace_strict(local, return_dtype=pl.Int64))
        at = pl.col("member")
        start = scan_start(pl.lit(layer[0]).gather(at), pl.col("cap"))
        frame = frame.with_columns(current=start.current, count=pl.lit(start.count, dtype=pl.Float64),
                                   over=start.over)
        scan = Scan(pl.col("current"), pl.col("count"), pl.col("over"))
        for k in range(1, n):
            frame = frame.with_columns(**scan_step(scan, pl.lit(layer[k]).gather(at), pl.col("cap"),
                                                   COLUMNS)._asdict())
        counted.append(frame.select("row", n=scan_result(scan, COLUMNS).cast(pl.Float64)).collect(engine="in-memory"))
    return pl.concat(counted).sort("row")["n"]


def plan_columns(tables: PlanTables) -> dict[str, pl.Expr]:
    """The rule's inputs of every cell, as columns: ``one{t}`` (the model fits one stage of TP t), ``stages{t}``
    (its stage count over several), ``valid{t}`` and ``lower``. The cells carry ``model_idx``, ``mf_idx`` (the
    (model, format) row), ``mfc_idx`` (the (model, format, context) row), ``stored_idx``, ``hw_idx``,
    ``tensor_parallel`` and ``cache_tp{t}`` (null where TP t does not split the model)."""
    hw = pl.col("model_idx") * tables.n_hw + pl.col("hw_idx")
    cls = pl.lit(tables.repack_class).gather(pl.col("stored_idx") * tables.n_hw + pl.col("hw_idx"))
    start = pl.lit(tables.group_start).gather(pl.col("mfc_idx"))
    n_class = pl.lit(tables.n_class).gather(pl.col("stored_idx"))
    out = {"lower": lower_bound(pl.lit(tables.total).gather(pl.col("mf_idx")),
                                pl.lit(tables.lower_budget).gather(hw), COLUMNS)}
    for t in TPS:
        group = start + TPS.index(t) * n_class + cls
        budget = pl.lit(tables.budget[t]).gather(hw)
        row = pl.lit(tables.group_base).gather(group) + pl.lit(tables.cap_index[t]).gather(hw)
        out[f"one{t}"] = (budget > 0) & (pl.lit(tables.one).gather(group) <= budget)
        out[f"stages{t}"] = pl.when(budget > 0).then(pl.lit(tables.stages).gather(row)).otherwise(math.inf)
        valid = pl.col(f"cache_tp{t}").is_not_null()
        out[f"valid{t}"] = valid if t == 1 else valid & pl.col("tensor_parallel")
    return out


def plan_exprs(tables: PlanTables) -> tuple[pl.Expr, pl.Expr]:
    """(GPUs, TP) of every cell, from :func:`plan_columns` and ``node_size``, ``layers``, ``tensor_parallel``."""
    def valid(t: int) -> Any:
        return pl.col(f"valid{t}") if t in TPS else False

    return fewest_layout(lambda t: pl.col(f"one{t}"), lambda t: pl.col(f"stages{t}"), valid, pl.col("lower"),
                         pl.col("node_size"), pl.col("layers"), pl.col("tensor_parallel"), MAX_GPUS, tables.max_node,
                         COLUMNS)
