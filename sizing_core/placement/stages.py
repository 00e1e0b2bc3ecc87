"""Pipeline stages: how many contiguous stages of at most a given size hold a model's layers.

The planner's fit test for a (TP, PP) plan is ``stage_count(loads, budget) <= PP``: the greedy split (fill a stage
until the next layer would overflow it) gives the fewest stages of contiguous layers under a cap, and a split into
fewer stages than PP is split further while some stage has two layers (always, for PP up to the layer count).

:func:`stage_count` folds a batch rule (``sizing_core.batch``), :func:`scan_step`, over the layers: the planner calls
it with numbers; a caller holding many caps (one column per layer, one row per cap) folds the same step on
columns and gets the same count, float for float, because both evaluate the same additions and comparisons in the
same order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

from ..batch import SCALAR, Ops


def stage_loads(layer_bytes: Sequence[float], first: float, last: float) -> list[float]:
    """The bytes the greedy split adds per layer on one GPU: each layer's bytes, the first stage's extras (embedding,
    towers) with the first layer and the last stage's (final norm, LM head) with the last layer, so that a stage's
    size is the plain running sum of its layers' loads."""
    loads = list(layer_bytes)
    if loads:
        loads[-1] = loads[-1] + last
        loads[0] = first + loads[0]
    return loads


class Scan(NamedTuple):
    """The greedy split after some layers: the open stage's bytes, the stages so far, whether a layer alone was above
    the cap."""

    current: Any
    count: Any
    over: Any


def scan_start(load: Any, cap: Any) -> Scan:
    """The split after the first layer."""
    return Scan(load, 1, load > cap)


def scan_step(scan: Scan, load: Any, cap: Any, ops: Ops = SCALAR) -> Scan:
    """The split after one more layer: it joins the open stage unless that would be above the cap, then opens
    the next one."""
    grown = scan.current + load
    split = grown > cap
    return Scan(ops.where(split, load, grown), ops.where(split, scan.count + 1, scan.count), scan.over | (load > cap))


def scan_result(scan: Scan, ops: Ops = SCALAR) -> Any:
    """The stage count, ``math.inf`` when a layer alone is above the cap."""
    return ops.where(scan.over, math.inf, scan.count)


def stage_count(loads: Sequence[float], cap: float) -> float:
    """The fewest contiguous stages of at most ``cap`` bytes that hold ``loads`` in order (:func:`stage_loads`);
    ``math.inf`` when one layer alone is above ``cap``.

    On numbers :func:`scan_step` runs inlined (the planner counts for every plan it tries; ``tests/test_stages.py``
    holds the two equal). A column caller folds :func:`scan_step` over its layer columns itself, one evaluated step
    at a time (a nested expression would repeat the running sum at every layer)."""
    if not loads:
        return 1
    current, count = loads[0], 1
    if current > cap:
        return math.inf
    for load in loads[1:]:
        grown = current + load
        if grown > cap:
            if load > cap:
                return math.inf
            current, count = load, count + 1
        else:
            current = grown
    return count
