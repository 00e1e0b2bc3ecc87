#!/usr/bin/env python3
"""Calibration of the serving model at a load: predicted vs measured on serving.csv, the fit of the few
at-load constants, residual bands, and the at-load section of docs/calibration.md.

    python scripts/calibrate_serving.py --fit   # fit the at-load constants (prints them: paste into step.py,
                                                # scheduler.py and steady_state.py), with 5-fold held-out figures
    python scripts/calibrate_serving.py         # figures of the current constants: writes
                                                # sizing_core/serving/bands.py and the tables of docs/calibration.md

Every case runs through :func:`sizing_core.serving.serve`, the call ``vramlab fit ... --rate R`` makes. The fit
minimises the mean absolute log(measured / predicted) of TTFT, ITL, E2E, output throughput and the step alone (the
measured ITL against the step at the measured batch), each term capped at a factor of 3 (robust to the few cases the model cannot reach) with calibrate.py's Nelder-Mead on the constants' logarithms.
"""

from __future__ import annotations

import argparse
import math
import random
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from calibrate import nelder_mead  # noqa: E402

from sizing_core.serving import calibration, scheduler, steady_state, step  # noqa: E402

QUANTITIES = ("ttft", "itl", "e2e", "tput")
WEIGHTS = {"ttft": 1.0, "itl": 1.0, "e2e": 1.0, "tput": 0.5}
STEP_WEIGHT = 1.0  # the measured ITL against the step at the batch Little's law gives from the measured figures
#: (module, name, key) of every fitted constant
PARAMS = [(step, "MEMORY_KIND_FACTOR", k) for k in ("HBM2", "HBM2e", "HBM3", "HBM3e", "GDDR6", "GDDR6X")] + [
    (step, "OVERLAP", None), (step, "SEQ_US", None), (step, "MFU_FACTOR", None), (step, "MFU_GENERATION", "Ampere"),
    (step, "ROUTE_US", None), (step, "ROUTE_GENERATION", "Ampere"), (step, "NODE_HOP_MS", None),
    (scheduler.Scheduler, "queue_factor", None), (scheduler.SGLang, "queue_factor", None)] + [
    (steady_state, "FLOOR_FACTOR", k) for k in ("vllm", "sglang")] + [
    (steady_state, "FRONT_MS", k) for k in ("vllm", "sglang")] + [(steady_state, "FRONT_TOKEN_US", None)]
FLOOR = {"OVERLAP": 0.01, "SEQ_US": 0.5, "EXPERT_US": 0.1, "FRONT_MS": 1.0, "FRONT_TOKEN_US": 0.1, "ROUTE_US": 0.05, "NODE_HOP_MS": 0.5}  # start of a constant that is zero (log space)
BANDS_PY = ROOT / "sizing_core" / "serving" / "bands.py"
DOC = ROOT / "docs" / "calibration.md"
BAND_QUANTILES = (0.05, 0.95)
#: a case's term in the loss counts at most this (a factor of 3): the few cases the model cannot reach (a run the
#: engine thrashed, a client timing chunks) do not pull the constants away from the rest
LOSS_CAP = math.log(3)


def get(module, name: str, key: object) -> float:
    value = getattr(module, name)
    return value[key] if key is not None else value


def put(module, name: str, key: object, value: float) -> None:
    if name == "MFU_FACTOR":
        value = min(value, 0.9 / 0.406)  # MFU at most 0.9
    if name == "MFU_GENERATION":
        value = min(value, 0.9 / 0.406 / step.MFU_FACTOR)
    if name == "OVERLAP":
        value = min(value, 1.0)  # at most the sum of the two
    if name == "MEMORY_KIND_FACTOR":
        value = min(value, step.MAX_EFFICIENCY / 0.583)  # the efficiency at most MAX_EFFICIENCY
    if key is None:
        setattr(module, name, value)
    else:
        getattr(module, name)[key] = value


def loss(x: list[float], ids: set[str] | None = None) -> float:
    for (module, name, key), v in zip(PARAMS, x, strict=True):
        put(module, name, key, math.exp(v))
    total = weight = 0.0
    for c in calibration.cases():
        if c.out or (ids is not None and c.id not in ids):
            continue
        for q in QUANTITIES:
            r = c.ratio(q)
            if r == r and r > 0:
                total += WEIGHTS[q] * min(abs(math.log(r)), LOSS_CAP)
                weight += WEIGHTS[q]
        if c.step_predicted_ms:  # the step alone at the measured batch: the step's constants without the fixed point
            total += STEP_WEIGHT * min(abs(math.log(c.step_measured_ms / c.step_predicted_ms)), LOSS_CAP)
            weight += STEP_WEIGHT
    return total / max(weight, 1)


def fit(ids: set[str] | None = None, iters: int = 200) -> list[float]:
    x0 = [math.log(max(get(m, n, k), FLOOR.get(n, 1e-3))) for m, n, k in PARAMS]
    best = nelder_mead(lambda x: loss(x, ids), x0, step=0.4, iters=iters, tol=1e-6)
    loss(best, ids)
    return [math.exp(v) for v in best]


def ape(ratio: float) -> float:
    """|predicted - measured| / measured from measured / predicted."""
    return abs(1 / ratio - 1)


def figures(cs: list) -> dict:
    ok = [c for c in cs if not c.out]
    out = {"cases": len(cs), "predicted": len(ok)}
    for q in QUANTITIES:
        ratios = [c.ratio(q) for c in ok if c.ratio(q) == c.ratio(q)]
        out[q] = {"n": len(ratios), "median_ape": statistics.median([ape(r) for r in ratios]) if ratios else math.nan,
                  "median_ratio": statistics.median(ratios) if ratios else math.nan, "ratios": ratios}
    steps = [c for c in ok if c.step_predicted_ms]
    out["step"] = {"n": len(steps), "within15": sum(abs(c.step_predicted_ms / c.step_measured_ms - 1) <= 0.15
                                                    for c in steps),
                   "median_ape": statistics.median([abs(c.step_predicted_ms / c.step_measured_ms - 1) for c in steps])
                   if steps else math.nan}
    return out


def quantile(values: list[float], q: float) -> float:
    s = sorted(values)
    pos = q * (len(s) - 1)
    lo = int(math.floor(pos))
    return s[lo] + (s[min(lo + 1, len(s) - 1)] - s[lo]) * (pos - lo)


MIN_GROUP = 8  # cases a model class needs for a band of its own


def bands(cs: list) -> dict[str, dict[str, tuple[float, float, int, float]]]:
    """Per quantity and model class (``*``: every class), from the cases of the loads ``fit`` takes (a rate or
    clients; bursts are not a CLI load)."""
    out: dict[str, dict[str, tuple[float, float, int, float]]] = {}
    for q in ("ttft", "itl", "e2e"):
        cases = [c for c in cs if not c.out and c.kind != "burst" and c.ratio(q) == c.ratio(q)]
        for group in ["*", *sorted({c.model_class for c in cases})]:
            ratios = [c.ratio(q) for c in cases if group in ("*", c.model_class)]
            if len(ratios) >= (6 if group == "*" else MIN_GROUP):
                out.setdefault(q, {})[group] = (quantile(ratios, BAND_QUANTILES[0]),
                                                quantile(ratios, BAND_QUANTILES[1]), len(ratios),
                                                statistics.median(ratios))
    return out


def coverage(cs: list, table: dict) -> tuple[int, int]:
    inside = total = 0
    for c in cs:
        if c.out or c.kind == "burst":
            continue
        for q, groups in table.items():
            r = c.ratio(q)
            if r == r:
                low, high, _, _ = groups.get(c.model_class) or groups["*"]
                total += 1
                inside += low <= r <= high
    return inside, total


def held_out_coverage(cs: list, folds: int = 5) -> tuple[int, int]:
    """Bands built without each fifth of the cases, checked on that fifth."""
    ids = sorted(c.id for c in cs if not c.out and c.kind != "burst")
    random.Random(37).shuffle(ids)
    inside = total = 0
    for k in range(folds):
        test = set(ids[k::folds])
        table = bands([c for c in cs if c.id not in test])
        i, t = coverage([c for c in cs if c.id in test], table)
        inside, total = inside + i, total + t
    return inside, total


def write_bands(table: dict) -> None:
    lines = ['"""Error bands of the serving model at a load: measured / predicted on the at-load calibration set '
             '(GENERATED by',
             '``scripts/calibrate_serving.py``; do not edit by hand). Per quantity: the (low, high) factors (the '
             f'{BAND_QUANTILES[0]:.0%}-{BAND_QUANTILES[1]:.0%}',
             'quantiles of measured / predicted) per model class (``*``: every class), their cases and median."""', "", "from __future__ import annotations",
             "", "BANDS: dict[str, dict] = {"]
    for q, groups in sorted(table.items()):
        lines.append(f"    {q!r}: {{")
        for group, (low, high, n, median) in groups.items():
            lines.append(f"        {group!r}: {{\"band\": ({low:.4g}, {high:.4g}), \"n\": {n}, \"median\": {median:.4g}}},")
        lines.append("    },")
    lines.append("}")
    BANDS_PY.write_text("\n".join(lines) + "\n")


def _fmt(v: float | None) -> str:
    if v is None or v != v:
        return "–"
    return f"{v:,.0f}" if v >= 100 else f"{v:,.1f}" if v >= 10 else f"{v:.2f}"


def doc_tables(cs: list, fig: dict, table: dict, held: tuple[int, int]) -> str:
    step_f = fig["step"]
    inside, total = coverage(cs, table)
    rows = [
        "| acceptance (calibration set) | goal | measured |", "|---|---|---|",
        f"| cases predicted | – | {fig['predicted']} of {fig['cases']} |",
        f"| E2E median APE | ≤ 12% | {fig['e2e']['median_ape']:.1%} (n={fig['e2e']['n']}) |",
        f"| ITL median APE | ≤ 12% | {fig['itl']['median_ape']:.1%} (n={fig['itl']['n']}) |",
        f"| TTFT median APE | ≤ 25% | {fig['ttft']['median_ape']:.1%} (n={fig['ttft']['n']}) |",
        f"| output tokens/s median APE | – | {fig['tput']['median_ape']:.1%} (n={fig['tput']['n']}) |",
        f"| batched step alone (batch by Little's law) within 15% | ≥ 70% | {step_f['within15']} of {step_f['n']} "
        f"({step_f['within15'] / max(step_f['n'], 1):.0%}) |",
        f"| TTFT/ITL/E2E of rate and closed-loop cases inside their band (in-sample) | ≥ 80% | {inside} of {total} ({inside / max(total, 1):.0%}) |",
        f"| inside bands built without them (5-fold) | ≥ 80% | {held[0]} of {held[1]} "
        f"({held[0] / max(held[1], 1):.0%}) |",
        "", "| load kind | cases | TTFT median APE | ITL median APE | E2E median APE | out tok/s median APE | "
        "step alone within 15% |", "|---|---|---|---|---|---|---|"]
    for kind in ("rate", "rate-constant", "concurrency", "burst"):
        sub = figures([c for c in cs if c.kind == kind])
        cells = [f"{sub[q]['median_ape']:.1%} ({sub[q]['n']})" if sub[q]["n"] else "–" for q in QUANTITIES]
        rows.append(f"| {kind} | {sub['predicted']} of {sub['cases']} | {' | '.join(cells)} | {sub['step']['within15']} "
                    f"of {sub['step']['n']} |")
    rows += ["", "| quantity | band (measured / predicted; rate and closed-loop cases) | cases | median |",
             "|---|---|---|---|"]
    rows += [f"| {q} ({group}) | {low:.3f}-{high:.3f} | {n} | {median:.3f} |"
             for q, groups in sorted(table.items()) for group, (low, high, n, median) in groups.items()]
    rows += ["", "| constant | value |", "|---|---|"]
    rows += [f"| serving.step.MEMORY_KIND_FACTOR | {step.MEMORY_KIND_FACTOR} |",
             f"| serving.step.OVERLAP | {step.OVERLAP:.4g} |", f"| serving.step.SEQ_US | {step.SEQ_US:.4g} |",
             f"| serving.step.EXPERT_US | {step.EXPERT_US:.4g} |",
             f"| serving.step.MFU_FACTOR | {step.MFU_FACTOR:.4g} |",
             f"| serving.step.MFU_GENERATION | {step.MFU_GENERATION} |",
             f"| serving.step.ROUTE_US | {step.ROUTE_US:.4g} |",
             f"| serving.step.ROUTE_GENERATION | {step.ROUTE_GENERATION} |",
             f"| serving.step.NODE_HOP_MS | {step.NODE_HOP_MS:.4g} |",
             f"| serving.scheduler.Scheduler.queue_factor (vLLM, llama.cpp) | {scheduler.Scheduler.queue_factor:.4g} |",
             f"| serving.scheduler.SGLang.queue_factor | {scheduler.SGLang.queue_factor:.4g} |",
             f"| serving.steady_state.FLOOR_FACTOR | {steady_state.FLOOR_FACTOR} |",
             f"| serving.steady_state.FRONT_MS | {steady_state.FRONT_MS} |",
             f"| serving.steady_state.FRONT_TOKEN_US | {steady_state.FRONT_TOKEN_US:.4g} |"]
    rows += ["", "| case | engine | GPU | model class | load | TTFT ms meas / pred | ITL ms meas / pred | "
             "E2E ms meas / pred | out tok/s meas / pred | step at measured batch (B) | source |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cs:
        if c.out:
            rows.append(f"| {c.id} | {c.engine} | {c.gpu} | – | {c.load} | not predicted: {c.out} | | | | | "
                        f"{c.citation} |")
            continue
        cells = [f"{_fmt(c.measured.get(q))} / {_fmt(c.predicted.get(q))}" for q in QUANTITIES]
        st = (f"{_fmt(c.step_measured_ms)} / {_fmt(c.step_predicted_ms)} ({c.batch_measured:,.0f})"
              if c.step_predicted_ms else "–")
        rows.append(f"| {c.id} | {c.engine} | {c.gpu} | {c.model_class} | {c.load} | {' | '.join(cells)} | {st} | "
                    f"{c.citation} |")
    return "\n".join(rows)


def write_doc(text: str) -> None:
    doc = DOC.read_text()
    block = f"<!-- serving:start -->\n{text}\n<!-- serving:end -->"
    if "<!-- serving:start -->" in doc:
        doc = re.sub(r"<!-- serving:start -->.*?<!-- serving:end -->", lambda _: block, doc, flags=re.S)
    else:
        doc = doc.rstrip("\n") + "\n\n" + block + "\n"
    DOC.write_text(doc)


def report(fig: dict) -> None:
    print(f"cases {fig['predicted']} predicted of {fig['cases']}")
    for q in QUANTITIES:
        f = fig[q]
        print(f"  {q}: n={f['n']} median APE {f['median_ape']:.1%}, median measured/predicted {f['median_ratio']:.3f}")
    s = fig["step"]
    print(f"  step alone within 15%: {s['within15']}/{s['n']} (median APE {s['median_ape']:.1%})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", action="store_true", help="fit the at-load constants and print them")
    parser.add_argument("--held-out", action="store_true", help="with --fit: 5-fold held-out figures too (slow)")
    args = parser.parse_args()
    if args.fit:
        report(figures(calibration.cases()))
        values = fit()
        for (owner, name, key), v in zip(PARAMS, values, strict=True):
            name = f"{owner.__name__}.{name}" if isinstance(owner, type) else name  # a scheduler class's own
            print(f"{name}[{key!r}] = {v:.4g}" if key else f"{name} = {v:.4g}")
        report(figures(calibration.cases()))
        if not args.held_out:
            return 0
        start = [get(m, n, k) for m, n, k in PARAMS]
        ids = sorted(c.id for c in calibration.cases() if not c.out)
        random.Random(37).shuffle(ids)
        ratios: dict[str, list[float]] = {q: [] for q in QUANTITIES}
        for k in range(5):
            test = set(ids[k::5])
            for (m, n, key), v in zip(PARAMS, start, strict=True):
                put(m, n, key, v)
            fit(set(ids) - test, iters=120)
            for c in calibration.cases():
                if c.id in test:
                    for q in QUANTITIES:
                        if c.ratio(q) == c.ratio(q):
                            ratios[q].append(c.ratio(q))
        for (m, n, key), v in zip(PARAMS, start, strict=True):
            put(m, n, key, v)
        print("5-fold held out: " + ", ".join(f"{q} median APE {statistics.median([ape(r) for r in v]):.1%}"
                                              for q, v in ratios.items() if v))
        return 0
    cs = calibration.cases()
    fig = figures(cs)
    report(fig)
    table = bands(cs)
    held = held_out_coverage(cs)
    inside, total = coverage(cs, table)
    print(f"  bands in-sample {inside}/{total}, 5-fold {held[0]}/{held[1]}")
    write_bands(table)
    write_doc(doc_tables(cs, fig, table, held))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
