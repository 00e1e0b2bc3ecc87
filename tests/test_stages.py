"""The stage count the planner's fit test reads, on numbers and on columns."""

from __future__ import annotations

import math
import random

import polars as pl

from pipeline.compute.columns import COLUMNS
from sizing_core.placement.search import _stage_bounds
from sizing_core.placement.stages import Scan, scan_result, scan_start, scan_step, stage_count, stage_loads


def test_stage_count_by_hand() -> None:
    loads = stage_loads([1.0] * 5, 0.5, 0.25)  # 1.5, 1, 1, 1, 1.25
    assert stage_count(loads, 3.0) == 3  # [1.5 1] [1 1] [1.25]
    assert stage_count(loads, 3.5) == 2  # [1.5 1 1] [1 1.25]
    assert stage_count(loads, 5.75) == 1
    assert stage_count(loads, 1.4) == math.inf  # the first layer with the embedding is 1.5


def test_stage_count_is_the_greedy_splits_length() -> None:
    """Where the greedy split into up to the layer count of stages succeeds, it has ``stage_count`` stages."""
    rng = random.Random(7)
    for _ in range(2000):
        n = rng.randint(1, 12)
        layers = [rng.choice((1.0, 2.0, 3.5)) * rng.random() for _ in range(n)]
        first, last, cap = rng.random(), rng.random(), rng.uniform(0.5, 8.0)
        sizes = _stage_bounds(layers, first, last, n, cap)
        count = stage_count(stage_loads(layers, first, last), cap)
        if sizes is None:
            assert count == math.inf
        else:
            assert count <= n and _stage_bounds(layers, first, last, count, cap) is not None
            assert count == 1 or _stage_bounds(layers, first, last, count - 1, cap) is None


def test_stage_count_on_columns_equals_numbers() -> None:
    """One row per cap, one column per layer: the column face counts what the planner counts, for every row."""
    rng = random.Random(11)
    layers = stage_loads([rng.uniform(1e8, 3e9) for _ in range(40)], 7e8, 1.3e9)
    caps = [rng.uniform(2e9, 9e10) for _ in range(3000)] + [max(layers) - 1.0, sum(layers), max(layers)]
    frame = pl.DataFrame({"cap": caps, **{f"l{i}": [x] * len(caps) for i, x in enumerate(layers)}})
    cols = [pl.col(f"l{i}") for i in range(len(layers))]
    start = scan_start(cols[0], pl.col("cap"))
    frame = frame.with_columns(current=start.current, count=pl.lit(start.count), over=start.over)
    scan = Scan(pl.col("current"), pl.col("count"), pl.col("over"))
    for col in cols[1:]:
        frame = frame.with_columns(**scan_step(scan, col, pl.col("cap"), COLUMNS)._asdict())
    got = frame.select(n=scan_result(scan, COLUMNS))["n"]
    assert got.to_list() == [stage_count(layers, c) for c in caps]
