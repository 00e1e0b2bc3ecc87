#!/usr/bin/env python3
"""Calibration of the engine models: fit, residuals, bands, and the tables of docs/calibration.md.

    python scripts/calibrate.py --fit     # fit engines.speed's constants; prints them (paste into sizing_core/engines/speed.py)
    python scripts/calibrate.py           # residuals of the current constants: writes sizing_core/calibration_bands.py
                                          # and the generated tables of docs/calibration.md

The fit minimises the sum of squared log(measured / predicted) over the calibration rows marked ``fit`` with a
plain Nelder-Mead search on the logarithms of the constants (no numpy in the project). Decode constants are fitted
on the decode quantities, then the prefill MFU and TTFT floors on prefill and TTFT. ``--fit`` also reports 5-fold
held-out residuals: each fifth of the decode rows predicted by constants fitted on the other four fifths.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sizing_core import calibration  # noqa: E402
from sizing_core.engines import speed as engine_speed  # noqa: E402

DECODE = ("decode_tok_s", "decode_batch_tok_s", "aggregate_tok_s")
PREFILL = ("prefill_tok_s", "ttft_ms")
#: (module dict or attribute, key) of every fitted constant, in order
DECODE_PARAMS = [("BANDWIDTH_EFFICIENCY", k) for k in engine_speed.BANDWIDTH_EFFICIENCY] + \
    [("LAYER_US", k) for k in engine_speed.LAYER_US] + \
    [("EAGER_FACTOR", None), ("MOE_LAYER_US", None), ("MLA_LAYER_US", None), ("EXPERT_EFFICIENCY", None)]
PREFILL_PARAMS = [("PREFILL_MFU", "server"), ("PREFILL_MFU", "llama.cpp"), ("TTFT_FLOOR_MS", "server"),
                  ("TTFT_FLOOR_MS", "llama.cpp")]
CAPPED = {"BANDWIDTH_EFFICIENCY", "PREFILL_MFU", "EXPERT_EFFICIENCY"}  # fractions of a peak: at most 1


def get(name: str, key: object) -> float:
    value = getattr(engine_speed, name)
    return value[key] if key is not None else value


def put(name: str, key: object, value: float) -> None:
    if name in CAPPED:
        value = min(value, 1.0)
    if key is None:
        setattr(engine_speed, name, value)
    else:
        getattr(engine_speed, name)[key] = value


def loss(params: list, x: list[float], quantities: tuple[str, ...], cases: set[str] | None) -> float:
    for (name, key), v in zip(params, x, strict=True):
        put(name, key, math.exp(v))
    total, n = 0.0, 0
    for c in calibration.speed_comparisons():
        if c.use != "fit" or c.quantity not in quantities or (cases is not None and c.case not in cases):
            continue
        r = c.ratio
        if r == r and r > 0:
            total += math.log(r) ** 2
            n += 1
    return total / max(n, 1)


def nelder_mead(f, x0: list[float], step: float = 0.3, iters: int = 1500, tol: float = 1e-7) -> list[float]:
    n = len(x0)
    simplex = [list(x0)] + [[x0[j] + (step if j == i else 0.0) for j in range(n)] for i in range(n)]
    values = [f(p) for p in simplex]
    for _ in range(iters):
        order = sorted(range(n + 1), key=values.__getitem__)
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        if values[-1] - values[0] < tol:
            break
        centroid = [sum(p[j] for p in simplex[:-1]) / n for j in range(n)]
        worst = simplex[-1]
        reflected = [c + (c - w) for c, w in zip(centroid, worst, strict=True)]
        fr = f(reflected)
        if fr < values[0]:
            expanded = [c + 2 * (c - w) for c, w in zip(centroid, worst, strict=True)]
            fe = f(expanded)
            simplex[-1], values[-1] = (expanded, fe) if fe < fr else (reflected, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = reflected, fr
        else:
            contracted = [c + 0.5 * (w - c) for c, w in zip(centroid, worst, strict=True)]
            fc = f(contracted)
            if fc < values[-1]:
                simplex[-1], values[-1] = contracted, fc
            else:
                best = simplex[0]
                simplex = [best] + [[b + 0.5 * (p - b) for b, p in zip(best, q, strict=True)] for q in simplex[1:]]
                values = [values[0]] + [f(p) for p in simplex[1:]]
    return simplex[min(range(n + 1), key=values.__getitem__)]


def fit(params: list, quantities: tuple[str, ...], cases: set[str] | None = None, iters: int = 1500) -> list[float]:
    x0 = [math.log(get(name, key)) for name, key in params]
    best = nelder_mead(lambda x: loss(params, x, quantities, cases), x0, iters=iters)
    loss(params, best, quantities, cases)  # leaves the best constants in place
    return [math.exp(v) for v in best]


def held_out(params: list, quantities: tuple[str, ...], folds: int = 5) -> list[float]:
    """measured / predicted of every fit row, each predicted by constants fitted without its fold."""
    cases = sorted({c.case for c in calibration.speed_comparisons() if c.use == "fit" and c.quantity in quantities})
    random.Random(22).shuffle(cases)
    start = [get(name, key) for name, key in params]
    ratios = []
    for k in range(folds):
        test = set(cases[k::folds])
        for (name, key), v in zip(params, start, strict=True):
            put(name, key, v)
        fit(params, quantities, set(cases) - test, iters=600)
        ratios += [c.ratio for c in calibration.speed_comparisons()
                   if c.case in test and c.quantity in quantities and c.use == "fit"]
    for (name, key), v in zip(params, start, strict=True):
        put(name, key, v)
    return ratios


def summary(ratios: list[float], factor: float) -> str:
    ok = [r for r in ratios if r == r]
    within = sum(1 / factor <= r <= factor for r in ok)
    return f"n={len(ok)} median {statistics.median(ok):.3f}, within {factor}x: {within}/{len(ok)} ({within / len(ok):.0%})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", action="store_true", help="fit the speed constants and print them")
    args = parser.parse_args()
    if args.fit:
        print("decode before:", summary([c.ratio for c in calibration.speed_comparisons()
                                         if c.use == "fit" and c.quantity in DECODE], 1.5))
        values = fit(DECODE_PARAMS, DECODE)
        for (name, key), v in zip(DECODE_PARAMS, values, strict=True):
            print(f"{name}[{key!r}] = {min(v, 1) if name in CAPPED else v:.4g}")
        print("decode after:", summary([c.ratio for c in calibration.speed_comparisons()
                                        if c.use == "fit" and c.quantity in DECODE], 1.5))
        values = fit(PREFILL_PARAMS, PREFILL)
        for (name, key), v in zip(PREFILL_PARAMS, values, strict=True):
            print(f"{name}[{key!r}] = {min(v, 1) if name in CAPPED else v:.4g}")
        print("prefill/ttft after:", summary([c.ratio for c in calibration.speed_comparisons()
                                              if c.use == "fit" and c.quantity in PREFILL], 1.5))
        print("decode 5-fold held out:", summary(held_out(DECODE_PARAMS, DECODE), 1.5))
        return 0
    from calibrate_report import write_outputs  # noqa: PLC0415 - the report half lives beside this script

    write_outputs()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
