"""The fewest-GPU search from stage counts (sizing_core/placement/fewest.py): by hand, against a plain search over every
count and pair, and on columns against numbers."""

from __future__ import annotations

import math
import random

import polars as pl
import pytest

from pipeline.compute.columns import COLUMNS
from sizing_core.placement.fewest import TP_SIZES, fewest_layout


def _search(one: dict, stages: dict, valid: dict, lower: int, node: int, layers: int, tensor_parallel: bool,
            max_gpus: int) -> tuple[int | None, int | None]:
    """Every count from the bound up, every (TP, PP) pair the engine could run on it, largest TP first."""
    for n in range(lower, max_gpus + 1):
        if n > layers * node:
            break
        if not tensor_parallel:
            pairs = [(1, n)] if n <= layers else []
        elif n <= node:
            pairs = [(t, n // t) for t in reversed(TP_SIZES) if t <= node and valid[t] and n % t == 0]
        else:
            t = max(t for t in TP_SIZES if t <= node and valid[t])
            pairs = [(t, n // t)] if n % t == 0 and n // t >= 2 else []
        for tp, pp in pairs:
            if pp <= layers and (one[tp] if pp == 1 else stages[tp] <= pp):
                return n, tp
    return None, None


def _case(rng: random.Random) -> dict:
    valid = {t: t == 1 or rng.random() < 0.7 for t in TP_SIZES}
    stages = {t: rng.choice((math.inf, *range(1, 40))) for t in TP_SIZES}
    return {"one": {t: stages[t] == 1 and rng.random() < 0.8 for t in TP_SIZES}, "stages": stages, "valid": valid,
            "lower": rng.randint(1, 20), "node": rng.choice((1, 4, 8, 12)), "layers": rng.randint(1, 60),
            "tensor_parallel": rng.random() < 0.6, "max_gpus": 128}


def _on_numbers(c: dict) -> tuple:
    return fewest_layout(c["one"].__getitem__, c["stages"].__getitem__,
                         lambda t: c["tensor_parallel"] and c["valid"][t], c["lower"], c["node"], c["layers"],
                         c["tensor_parallel"], c["max_gpus"], c["node"])


def test_by_hand() -> None:
    no = dict.fromkeys(TP_SIZES, False)
    every = dict.fromkeys(TP_SIZES, True)
    # on machines of 8, 10 stages at TP 1, 4 at TP 2, 3 at TP 4, 2 at TP 8: TP 2 x PP 4 is the first pair that fits
    stages = {1: 10, 2: 4, 4: 3, 8: 2, 16: 1, 32: 1, 64: 1}
    case = {"one": no, "stages": stages, "valid": every, "lower": 1, "node": 8, "layers": 60,
            "tensor_parallel": True, "max_gpus": 128}
    assert _on_numbers(case) == (8, 2)
    # 5 stages at TP 2: nothing fits one machine, so TP 8 x PP 2 on two (PP 2 holds its 2 stages), or PP 3
    assert _on_numbers({**case, "stages": {**stages, 2: 5}}) == (16, 8)
    assert _on_numbers({**case, "stages": {**stages, 2: 5, 8: 3}}) == (24, 8)
    assert _on_numbers({**case, "stages": {**stages, 2: 5}, "lower": 17}) == (24, 8)  # the bound: PP 3
    assert _on_numbers({**case, "valid": {**every, 8: False}, "stages": {**stages, 2: 5}}) == (12, 4)  # TP 4 x 3
    assert _on_numbers({**case, "tensor_parallel": False}) == (10, 1)  # layers split over 10 devices
    assert _on_numbers({**case, "tensor_parallel": False, "layers": 9}) == (None, None)  # more stages than layers


@pytest.mark.parametrize("seed", range(4))
def test_equals_the_plain_search(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(3000):
        c = _case(rng)
        assert _on_numbers(c) == _search(**c), c


def test_on_columns_equals_numbers() -> None:
    """One row per case, the stage counts and verdicts as columns: the column face gives every row's answer."""
    rng = random.Random(5)
    cases = [_case(rng) for _ in range(4000)]
    frame = pl.DataFrame({
        **{f"one{t}": [c["one"][t] for c in cases] for t in TP_SIZES},
        **{f"stages{t}": [float(c["stages"][t]) for c in cases] for t in TP_SIZES},
        **{f"valid{t}": [c["valid"][t] for c in cases] for t in TP_SIZES},
        **{k: [c[k] for c in cases] for k in ("lower", "node", "layers", "tensor_parallel")}})
    gpus, tp = fewest_layout(lambda t: pl.col(f"one{t}"), lambda t: pl.col(f"stages{t}"),
                             lambda t: pl.col(f"valid{t}") & pl.col("tensor_parallel"), pl.col("lower"),
                             pl.col("node"), pl.col("layers"), pl.col("tensor_parallel"), 128, 12, COLUMNS)
    got = frame.select(gpus=gpus.cast(pl.Int64), tp=tp.cast(pl.Int64))
    assert list(got.iter_rows()) == [_on_numbers(c) for c in cases]
