"""The fewest GPUs of a model on one GPU kind and engine, from its stage counts: the planner's search as one rule.

The planner tries GPU counts from a lower bound up and, per count, the (TP, PP) pairs the engine could run, largest
TP first; a pair fits when the model's stage count at that TP is at most PP
(``sizing_core.placement.stages``). :func:`fewest_layout` is that search written once as a batch rule
(``sizing_core.batch``): the planner calls it with numbers, the sizing grid with one column per stage count and gets
the planner's count and TP on every cell.

- An engine that splits layers (llama.cpp, MLX) runs TP 1 on any count up to the layer count.
- Inside one machine a tensor-parallel engine runs any valid TP that divides the count (TP 1 x PP n at worst).
- Across machines TP is the largest valid size that fits one machine and PP counts stages of it, at least two.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..batch import SCALAR, Ops

#: the tensor-parallel sizes an engine may use
TP_SIZES = (1, 2, 4, 8, 16, 32, 64)


def lower_bound(total_bytes: Any, budget: Any, ops: Ops = SCALAR) -> Any:
    """Fewer GPUs than this cannot hold ``total_bytes`` of weights when each GPU holds at most ``budget`` (its
    memory after the smallest working memory any TP size gets); 1 without a budget."""
    return ops.where(budget > 0, ops.maximum(1, ops.ceil(total_bytes / ops.where(budget > 0, budget, 1.0))), 1)


def _never(cond: Any) -> bool:
    """A condition known to be false before any row is read (numbers, or a TP size statically out of range)."""
    return cond is False


def fewest_layout(one_stage: Callable[[int], Any], stages: Callable[[int], Any], valid: Callable[[int], Any],
                  lower: Any, node: Any, layers: Any, tensor_parallel: Any, max_gpus: int, max_node: int,
                  ops: Ops = SCALAR) -> tuple[Any, Any]:
    """(GPUs, TP) of the smallest plan that fits, largest TP first among equal counts; (None, None) past
    ``max_gpus``.

    ``one_stage(tp)``: the model fits one stage of that TP; ``stages(tp)``: its stage count when split over several
    (``math.inf``: never); ``valid(tp)``: the engine may run that TP size on the model (it splits the heads);
    ``lower``: no fewer GPUs can hold it; ``node``: GPUs per machine (at most ``max_node``); ``layers``: the
    decoder layer count, the most stages. On numbers, a case known to hold ends the search (the later ones are not
    evaluated); on columns every case is an expression and the first that holds per row wins."""
    none = ops.const(None)
    if tensor_parallel is not True:
        split = _split_layers(one_stage, stages, lower, layers, max_gpus, ops)
        if tensor_parallel is False:
            return split, ops.where(ops.not_null(split), 1, none)
    inside = _inside_machine(one_stage, stages, valid, lower, node, layers, max_gpus, max_node, ops)
    if inside and inside[-1][0] is True:  # numbers: found inside one machine
        gpus, tp = inside[-1][1], inside[-1][2]
    else:
        across, top = _across_machines(stages, valid, lower, node, layers, max_gpus, max_node, ops)
        cases = [*inside, (ops.not_null(across), across, top)]
        gpus = ops.first([(c, n) for c, n, _ in cases], none)
        tp = ops.first([(c, t) for c, _, t in cases], none)
    if tensor_parallel is True:
        return gpus, tp
    return ops.where(tensor_parallel, gpus, split), ops.where(tensor_parallel, tp, ops.where(ops.not_null(split), 1,
                                                                                             none))


def _split_layers(one_stage: Callable[[int], Any], stages: Callable[[int], Any], lower: Any, layers: Any,
                  max_gpus: int, ops: Ops) -> Any:
    """Layers split over devices at TP 1: one device, else the fewest stages at or above the bound."""
    one = (lower <= 1) & one_stage(1)
    if one is True:
        return 1
    split = ops.maximum(ops.maximum(lower, 2), stages(1))
    return ops.where(one, 1, ops.where((split <= layers) & (split <= max_gpus), split, ops.const(None)))


def _inside_machine(one_stage: Callable[[int], Any], stages: Callable[[int], Any], valid: Callable[[int], Any],
                    lower: Any, node: Any, layers: Any, max_gpus: int, max_node: int,
                    ops: Ops) -> list[tuple[Any, Any, Any]]:
    """(holds, GPUs, TP) per count inside one machine, smallest count first: a count holds from the bound up when
    some valid TP dividing it fits (its largest such TP)."""
    cases = []
    for n in range(1, min(max_node, max_gpus) + 1):
        if _never(n <= node) or _never(n >= lower):
            continue
        by_tp = []
        for t in reversed(TP_SIZES):
            if t > n or n % t or _never(valid(t)) or _never(t <= node):
                continue
            pp = n // t
            if pp == 1:
                holds = valid(t) & (t <= node) & one_stage(t)
            elif _never(pp <= layers):
                continue
            else:
                holds = valid(t) & (t <= node) & (pp <= layers) & (stages(t) <= pp)
            if _never(holds):
                continue
            by_tp.append((holds, t))
            if holds is True:
                break
        if not by_tp:
            continue
        here = (n >= lower) & (n <= node) & ops.first([(holds, True) for holds, _ in by_tp], False)
        if _never(here):
            continue
        cases.append((here, n, ops.first(by_tp, ops.const(None))))
        if here is True:
            break
    return cases


def _across_machines(stages: Callable[[int], Any], valid: Callable[[int], Any], lower: Any, node: Any, layers: Any,
                     max_gpus: int, max_node: int, ops: Ops) -> tuple[Any, Any]:
    """(GPUs, TP) across machines: the largest valid TP of one machine, PP past one machine and the bound."""
    top: Any = 1
    sizes = [1]
    for t in TP_SIZES[1:]:
        if t > max_node or _never(valid(t)) or _never(t <= node):
            continue
        top = ops.where(valid(t) & (t <= node), t, top)
        sizes.append(t)
    top_stages = stages(top) if isinstance(top, int) else ops.first([(top == t, stages(t)) for t in sizes], None)
    start = ops.maximum(lower, node + 1)
    pp = ops.maximum(ops.maximum(2, top_stages), (start + top - 1) // top)
    return ops.where((pp <= layers) & (top * pp <= max_gpus), top * pp, ops.const(None)), top
