"""The at-load calibration set (``data/calibration/serving.csv``: public benchmark_serving / bench_serving /
guidellm / InferenceX results, each with its citation and quoted lines) against :func:`sizing_core.serving.serve`,
the call ``vramlab fit ... --rate R`` makes. Reading package data is the only I/O, as for ``calibration.py``.

Each row becomes a setup (config, GPU, engine with the settings the row states, TP x PP, DP replicas sharing the
load) and a :class:`Workload` (the row's mean lengths, its rate, clients or burst size, its run length and how its
output lengths spread: ShareGPT ~ exponential, the ``random`` dataset's range ratio ``r`` uniform from ``r`` to 1 of
the maximum, else fixed: every request those very lengths). Measured: mean TTFT, ITL (or TPOT), E2E (medians where
means are not given; a median E2E over ShareGPT's spread of output lengths is set against the median-length request's, ``ln 2`` of the mean output,
and a median TTFT against the median-length prompt's prefill, :func:`median_prompt_saving_ms`) and output tokens/s;
an ITL more than twice what the row's own (E2E - TTFT) / (O - 1) gives is not counted (the client timed chunks of
several tokens), nor a burst's TTFT below what its prompts take at the GPUs' peak FLOPs (:func:`prefill_bound_ms`:
not all sent at once).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ..calibration import _float, _int, case_arch, model_class, read_csv
from ..engines import get_engine
from ..gpus import get_gpu
from . import Serving, Workload, serve

MODELLED_ENGINES = ("vllm", "sglang", "llama.cpp")
QUANTITIES = ("ttft", "itl", "e2e", "tput")


@dataclass
class Case:
    id: str
    engine: str
    gpu: str
    model_class: str
    load: str  # rate R, K clients, burst N
    kind: str  # the row's load_kind
    measured: dict[str, float]
    predicted: dict[str, float] = field(default_factory=dict)
    step_measured_ms: float | None = None  # ITL at the batch Little's law gives from the measured figures
    step_predicted_ms: float | None = None
    batch_measured: float | None = None
    citation: str = ""
    out: str = ""  # why it is not predicted

    def ratio(self, quantity: str) -> float:
        m, p = self.measured.get(quantity), self.predicted.get(quantity)
        return m / p if m and p else math.nan


def _first(row: dict[str, str], *columns: str) -> float | None:
    for c in columns:
        value = _float(row.get(c))
        if value is not None and value > 0:
            return value
    return None


def measured(row: dict[str, str]) -> dict[str, float]:
    out = {"ttft": _first(row, "ttft_ms_mean", "ttft_ms_median"),
           "itl": _first(row, "itl_ms_mean", "tpot_ms_mean", "itl_ms_median", "tpot_ms_median"),
           "e2e": _first(row, "e2e_ms_mean", "e2e_ms_median"),
           "tput": _first(row, "output_tokens_per_s")}
    out = {k: v for k, v in out.items() if v is not None}
    decodes = float(row["output_tokens"]) - 1
    if {"itl", "e2e", "ttft"} <= set(out) and decodes > 0 and out["itl"] * decodes > 2 * (out["e2e"] - out["ttft"]):
        del out["itl"]  # the run's own E2E - TTFT says otherwise (the client timed stream chunks of many tokens)
    return out


def output_cv2(row: dict[str, str]) -> float:
    """How the run's output lengths spread: ShareGPT ~ exponential (1); the random dataset's range ratio ``r``
    draws them uniform between ``r`` and 1 of the maximum, a squared CV of ``(1 - r)^2 / (3 (1 + r)^2)`` (1/3 up
    to the maximum, ``r = 0``); fixed (0) where the row states no spread."""
    if row["dataset"] == "sharegpt":
        return 1.0
    note = row.get("note", "").lower()
    stated = re.search(r"range[ _-]ratio (\d*\.?\d+)", note)
    if stated:
        r = float(stated.group(1))
        return (1 - r) ** 2 / (3 * (1 + r) ** 2)
    return 1 / 3 if "uniform" in note else 0.0


def workload(row: dict[str, str], replicas: int = 1) -> Workload:
    kind = row["load_kind"]
    prompts = _int(row.get("num_prompts"))
    spread = output_cv2(row)
    common = dict(input_tokens=max(1, round(float(row["input_tokens"]))),
                  output_tokens=max(1, round(float(row["output_tokens"]))), output_cv2=spread,
                  fixed_lengths=spread == 0.0)
    if kind in ("rate", "rate-constant"):
        return Workload(rate=float(row["request_rate"]) / replicas, kind=kind,
                        num_prompts=prompts // replicas if prompts else None, **common)
    if kind == "burst":
        return Workload(concurrency=max(1, (prompts or 1000) // replicas), kind="burst", num_prompts=prompts, **common)
    clients = _int(row["concurrency"]) or 1
    return Workload(concurrency=max(1, clients // replicas), kind="concurrency",
                    num_prompts=prompts // replicas if prompts else None, **common)


def predict(row: dict[str, str]) -> tuple[Serving, int, object] | str:
    """(the serving answer for one replica, the replicas, the solver's setup) or why the row is not predicted."""
    from ..placement.deployment import startup_for_layout
    from .scheduler import scheduler_for
    from .steady_state import Solver
    from .step import StepModel

    if row["engine_id"] not in MODELLED_ENGINES:
        return f"engine {row['engine_id']} not modelled"
    if not row["config"]:
        return "no public config in the set"
    arch = case_arch(row["config"])
    gpu = get_gpu(row["gpu_id"])
    engine = get_engine(row["engine_id"]).with_settings(
        version=row.get("engine_version") or None, max_num_seqs=_int(row.get("max_num_seqs")),
        max_num_batched_tokens=_int(row.get("max_num_batched_tokens")),
        memory_fraction=_float(row.get("gpu_memory_utilization")))
    if steps := _int(row.get("num_scheduler_steps")):
        engine = engine.with_settings(num_scheduler_steps=steps)
    tp, pp, dp = _int(row["tp"]) or 1, _int(row["pp"]) or 1, _int(row.get("dp")) or 1
    # dp inside the TP group (GPUs = tp x pp): DP attention, one engine serving the whole load; else replicas
    attention_dp = dp if dp > 1 and (_int(row.get("gpu_count")) or tp * pp * dp) == tp * pp else 1
    if attention_dp > 1:
        dp = 1
    ep = _int(row.get("ep")) or 1
    nodes = _int(row.get("nodes")) or math.ceil(tp * pp / gpu.node_size)  # stated, else packed
    fmt = row["format"] or "bf16"
    kv = {"fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "auto": "bf16"}.get(row.get("kv_cache_dtype") or "bf16",
                                                                   row.get("kv_cache_dtype") or "bf16")
    native = engine.supports(gpu, fmt, arch).native
    load = workload(row, dp)
    context = min(arch.max_context or 32768, 32768)
    context = max(context, load.input_tokens + load.output_tokens)
    start = startup_for_layout(arch, gpu, engine, fmt, tp, pp, context, kv, 1)
    if not start.starts:
        return "the modelled pool does not hold one request (the start-up model says it would not start)"
    answer = serve(arch, gpu, engine, fmt, tp, pp, load, start, kv, native, nodes, dp_attention=attention_dp,
                   expert_parallel=ep)
    solver = Solver(StepModel(arch, gpu, engine, fmt, tp, pp, kv, native, nodes, dp_attention=attention_dp,
                              expert_parallel=ep),
                    scheduler_for(engine, gpu, start), load)
    return answer, dp, solver


def median_prompt_saving_ms(solver, batch: float) -> float:
    """How much sooner the median-length prompt of ShareGPT's spread (about exponential: ``ln 2`` of the mean)
    gets its first token than the mean-length one, at the same load: the difference of their own prefills."""
    from dataclasses import replace

    w = solver.w
    short = replace(w, input_tokens=max(1, round(math.log(2) * w.input_tokens)))
    args = (solver.model, batch, solver.held)
    return max(0.0, solver.sched.prefill_service_ms(*args, w, solver.limits)
               - solver.sched.prefill_service_ms(*args, short, solver.limits))


def prefill_bound_ms(solver) -> float:
    """The least mean TTFT of a burst: its prompts' matrix FLOPs at the GPUs' peak (no MFU), taken in one after
    the other (the mean prompt waits for half of them)."""
    from ..engines.speed import PREFILL_MFU

    model, load = solver.model, solver.w
    if not model.flops:
        return 0.0
    peak = model.flops / (PREFILL_MFU[model.family] * model.mfu_factor)
    total = float(load.concurrency or 1) * load.input_tokens * 2 * model.active / (model.tp * model.pp)
    return total / peak * 1000 / 2


def cases() -> list[Case]:
    out = []
    for row in read_csv("serving.csv"):
        m = measured(row)
        load = {"rate": f"{row['request_rate']} req/s", "rate-constant": f"{row['request_rate']} req/s constant",
                "concurrency": f"{row['concurrency']} clients", "burst": f"burst of {row['num_prompts']}"}[
            row["load_kind"]]
        case = Case(id=row["id"], engine=row["engine_id"], gpu=row["gpu_id"], model_class="", load=load,
                    kind=row["load_kind"], measured=m,
                    citation=row["citation"].split(" (")[0])
        try:
            got = predict(row)
        except Exception as exc:  # noqa: BLE001 - a row the model cannot take is reported, not fatal
            got = f"{type(exc).__name__}: {exc}"
        if isinstance(got, str):
            case.out = got
            out.append(case)
            continue
        answer, replicas, solver = got
        case.model_class = model_class(case_arch(row["config"]))
        tput = answer.output_tokens_per_s
        load = solver.w
        if load.open_loop and load.num_prompts and not answer.saturated:  # a run of N prompts: N/R + the last E2E
            tput = load.num_prompts * load.output_tokens / (load.num_prompts / answer.requests_per_s
                                                             + answer.e2e_ms / 1000)
        if row["load_kind"] == "burst" and "ttft" in m and m["ttft"] < prefill_bound_ms(solver):
            del m["ttft"]  # below what the burst's prompts take at the GPUs' peak FLOPs: not a burst as stated
        ttft = answer.ttft_ms
        if not _first(row, "ttft_ms_mean") and output_cv2(row) == 1.0:
            ttft -= median_prompt_saving_ms(solver, answer.mean_batch)
        e2e = answer.e2e_ms
        if not _first(row, "e2e_ms_mean") and output_cv2(row) == 1.0:
            # a median E2E over exponential output lengths is the median-length request's: ln 2 of the mean output
            e2e = ttft + max(0.0, math.log(2) * load.output_tokens - 1) * answer.itl_ms
        case.predicted = {"ttft": ttft, "itl": answer.itl_ms, "e2e": e2e, "tput": tput * replicas}
        if "itl" in m and "tput" in m:  # the step alone, at the batch Little's law gives from the measured figures
            batch = m["tput"] / replicas * m["itl"] / 1000
            rate = m["tput"] / replicas / float(row["output_tokens"])
            prefill = rate * solver.w.input_tokens * m["itl"] / 1000
            case.batch_measured = batch
            case.step_measured_ms = m["itl"]
            case.step_predicted_ms = solver.step(batch, prefill)
        out.append(case)
    return out
