"""``vramlab fit``: fewest GPUs for one format or every format, what limits the count, and what it costs.

The answer for a format is the one the published model JSON gives for the same cell: with the default engine, a
format the engine does not serve is answered with the substitute the export's column uses (``q4_k_m`` on vLLM is
AWQ int4; ``fp8`` without FP8 kernels is INT8 on vLLM and Q8_0 on llama.cpp), and the substitute is named.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pipeline.cli.models import load_ref, model_repo
from pipeline.cli.resolve import resolve_model
from sizing_core import Architecture
from sizing_core.calibration import startup_ranges
from sizing_core.engines import Engine, default_engine, get_engine
from sizing_core.engines.memory import EngineStartup
from sizing_core.gpus import GPU, get_gpu
from sizing_core.launch import known_sources, launch_command
from sizing_core.placement.deployment import exact, fewest, remedy, served_concurrency, shortfall
from sizing_core.placement.limits import Binding, binding
from sizing_core.placement.search import Placement, fewest_gpus
from sizing_core.throughput import estimate

#: the formats ``fit`` without ``--format`` answers, most faithful first
ALL_FORMATS = ("native", "bf16", "fp8", "int8", "q8_0", "q6_k", "q5_k_m", "awq_int4", "nvfp4", "mxfp4", "q4_k_m",
               "iq4_xs", "q3_k_m", "q2_k")
DEFAULT_HOURS_PER_DAY = 4.0  # seed 000's rent-vs-buy default ("4 h / day")
DEFAULT_USD_PER_KWH = 0.15


#: the ``vramlab fit`` flag of each setting :func:`sizing_core.placement.deployment.remedy` may change
REMEDY_FLAGS = {"memory_fraction": "--gpu-memory-utilization", "kv_cache_dtype": "--kv-cache-dtype",
                "format": "--format"}
#: GPUs people own rather than rent: when the answer is more than one of them, ``--offload`` is the other way
OWNED_KINDS = ("consumer", "workstation", "unified", "apple")


def _limit(arch: Architecture, gpu: GPU, engine: Engine, fmt: str, placed: Placement,
           start: EngineStartup | None, asked: int | None) -> dict[str, Any]:
    """Why this many GPUs (or why the GPUs asked do not hold the load): the term that binds, read from the memory
    breakdown (``sizing_core.placement.limits``) of the deployment one GPU smaller (or of the one asked), and the one
    setting that would change the answer (``sizing_core.placement.deployment.remedy``; ``--offload`` on GPUs people own)."""
    plan = placed.plan
    if plan is None:
        return {"kind": "unsupported" if not placed.native_support and placed.reason == placed.support_note
                else "too_large", "note": placed.reason or ""}
    if not placed.fits:  # exactly the GPUs asked, and they do not hold it
        short = binding(plan, start, engine.name, placed.concurrency, placed.context)
        if short is not None:
            return _explained(arch, gpu, engine, fmt, placed, short, short.note)
    if plan.gpus == 1:
        return {"kind": "none", "note": f"fits on one GPU with {plan.headroom_gib:.1f} GiB to spare"}
    if asked is None:
        below = shortfall(arch, gpu, engine, fmt, plan.gpus - 1, placed.context, placed.concurrency,
                          placed.kv_cache_dtype)
        if below is not None:
            return _explained(arch, gpu, engine, fmt, placed, below, f"{below.note}; {plan.gpus} hold it")
    largest = plan.largest_stage
    weights = sum(s.weights for s in plan.stages) * plan.tensor_parallel
    per_gpu_budget = plan.usable_gib - largest.activations - largest.engine_overhead
    cache = sum(s.kv_cache + s.recurrent_state for s in plan.stages)
    weight_bound = max(1, math.ceil(weights / per_gpu_budget)) if per_gpu_budget > 0 else plan.gpus
    short = fewest_gpus(arch, gpu, engine, fmt, 1, 1, placed.kv_cache_dtype)
    if short.gpus is not None and short.gpus < plan.gpus:
        return {"kind": "kv_cache", "note": f"KV cache and state of {placed.concurrency} request(s) of "
                f"{placed.context:,} tokens ({cache:.1f} GiB per replica) need {plan.gpus} GPUs where the "
                f"weights alone need {short.gpus}"}
    if weight_bound >= plan.gpus:
        return {"kind": "weights", "note": f"{weights:,.1f} GiB of weights over {per_gpu_budget:.1f} GiB usable "
                f"per GPU needs {weight_bound}"}
    return {"kind": "parallelism", "note": f"weights need {weight_bound} GPUs by memory, but tensor parallelism "
            f"must divide the attention heads and stages hold whole layers ({', '.join(map(str, plan.layers_per_stage))}"
            f" layers per stage): the smallest valid plan is TP {plan.tensor_parallel} x PP "
            f"{plan.pipeline_parallel}"}


def _explained(arch: Architecture, gpu: GPU, engine: Engine, fmt: str, placed: Placement, short: Binding,
               note: str) -> dict[str, Any]:
    """``limitedBy`` from a binding term: its kind and note, the GPU count it is about (``onGpus``), the
    breakdown (``termsGiB``) and ``change``: the one flag that makes ``onGpus`` GPUs hold it, or null."""
    found = remedy(arch, gpu, engine, fmt, short.gpus, placed.context, placed.concurrency, placed.kv_cache_dtype,
                   short.kind, ALL_FORMATS)
    change = None
    if found is not None:
        flag = f"{REMEDY_FLAGS[found.setting]} {found.value}"
        on = "one GPU" if found.gpus == 1 else f"{found.gpus} GPUs"
        change = {"flag": flag, "gpus": found.gpus,
                  "note": f"{flag} holds it on {on}" + (
                      f" ({engine.name} uses {found.value} of the GPU's memory instead of {found.was})"
                      if found.setting == "memory_fraction" else
                      f" (the cache in {found.value} instead of {found.was}: half the bytes per token)"
                      if found.setting == "kv_cache_dtype" else
                      f" (fewer bytes per weight than {found.was}, less faithful)")}
    elif short.kind == "weights" and gpu.kind in OWNED_KINDS:
        change = _offload_change(arch, gpu, fmt, placed)
    terms = {"weights": short.weights, "activationPeak": short.activation_peak, "kvCache": short.kv_cache,
             "engineReserve": short.engine_reserve, "usable": short.usable, "leftForKv": short.left_for_kv}
    return {"kind": short.kind, "note": note, "onGpus": short.gpus,
            "termsGiB": {k: round(v, 3) for k, v in terms.items()}, "change": change}


def _offload_change(arch: Architecture, gpu: GPU, fmt: str, placed: Placement) -> dict[str, Any] | None:
    """``--offload`` as the change when it runs the model on one of these GPUs (``pipeline/cli/offload.py``)."""
    from pipeline.cli.offload import offload_answer, offload_format

    got = offload_answer(arch, gpu, 1, offload_format(arch, gpu, fmt), placed.context, placed.kv_cache_dtype,
                         "auto")
    if not got["fits"]:
        return None
    return {"flag": "--offload", "gpus": 1,
            "note": f"--offload runs it on one {gpu.name} with llama.cpp, {got['ramGiB']:,.1f} GiB of its "
                    f"{got['format']} weights ({got['mode']}) in system RAM (at least {got['systemRamNeededGiB']} "
                    f"GiB), ~{got['decodeTokensPerS'] or 0:,.1f} tok/s"}


def _warnings(arch: Architecture, gpu: GPU, plan: Any) -> list[str]:  # noqa: ANN401 - a Plan or None
    out = []
    if arch.encoder_tokens is not None:
        out.append(f"encoder-decoder: weights of both stacks ({len(arch.encoder_layers)} encoder and "
                   f"{arch.num_layers} decoder layers); KV cache = the decoder's self-attention per token + the "
                   f"cross-attention keys and values of {arch.encoder_tokens:,} encoder tokens per request")
    if plan is not None and plan.nodes > 1 and gpu.kind in ("consumer", "workstation", "unified", "apple"):
        out.append(f"spans {plan.nodes} machines of {gpu.kind} GPUs: layers are split over the network (llama.cpp "
                   "RPC or pipeline stages without NVLink/InfiniBand); expect far lower speed than the estimate")
    return out


def place(arch: Architecture, gpu: GPU, fmt: str, context: int, concurrency: int, engine_id: str | None,
          kv_cache_dtype: str, substitute: bool = True, gpus: int | None = None,
          settings: dict[str, Any] | None = None
          ) -> tuple[Placement, Engine, dict[str, str] | None, EngineStartup | None]:
    """The placement for ``fmt`` on the fewest GPUs (or exactly ``gpus``) with the engine's start-up figures;
    with the default engine, the export's substitute when the engine refuses. ``settings``: the engine's start-up
    flags (``memory_fraction``, ``max_num_batched_tokens``, ``max_num_seqs``, ``version``; None = its default)."""
    engine = (get_engine(engine_id) if engine_id else default_engine(gpu)).with_settings(**(settings or {}))

    def answer(f: str) -> tuple[Placement, EngineStartup | None]:
        if gpus is not None:
            return exact(arch, gpu, engine, f, gpus, context, concurrency, kv_cache_dtype)
        return fewest(arch, gpu, engine, f, context, concurrency, kv_cache_dtype)

    placed, start = answer(fmt)
    answer_with = None
    if substitute and not placed.fits and engine_id is None and fmt != "native" and not placed.native_support \
            and placed.reason == placed.support_note:
        alt = engine.substitute_format(fmt, gpu)
        if alt != fmt:
            other, other_start = answer(alt)
            if other.fits:
                answer_with = {"format": alt, "for": fmt, "reason": placed.support_note,
                               "note": f"{engine.name} does not serve {fmt} here ({placed.support_note}); "
                                       f"answered with {alt}, as the published gpusNeeded column does"}
                placed, start = other, other_start
    return placed, engine, answer_with, start


def startup_json(start: EngineStartup | None, engine: Engine, gpu: GPU, arch: Architecture) -> dict[str, Any] | None:
    """``engineStartup``: what the engine would log at start-up (keys are a contract: docs/cli.md), with the
    calibration's range around the pool, its tokens and the weights (``calibration.startup_ranges``), and the
    requests it serves at once."""
    if start is None:
        return None
    return start.model_dump(mode="json") | startup_ranges(start, engine, gpu, arch).model_dump(mode="json") | {
        "servedConcurrency": served_concurrency(start, engine, gpu)}


def fit_result(model: str, gpu_id: str, fmt: str, context: int = 8192, concurrency: int = 1,
               engine_id: str | None = None, kv_cache_dtype: str = "bf16", data_dir: Path | None = None,
               arch: Architecture | None = None, repo: str | None = None, substitute: bool = True,
               gpus: int | None = None, settings: dict[str, Any] | None = None,
               gguf_files: dict[str, Any] | None = None, load: Any = None,  # noqa: ANN401 - a Workload
               cpu_offload_gb: float | None = None) -> dict[str, Any]:
    """The ``vramlab fit --json`` object for one format (keys are a contract: see docs/cli.md); ``gpus``: exactly
    that many GPUs in the engine's default layout (else the fewest); ``settings``: the engine's start-up flags;
    ``gguf_files``: the GGUF repos the model's Hub revision lists, by quant type (launch commands name only those);
    ``load``: a :class:`sizing_core.serving.Workload`, adding the ``serving`` object (without one the
    answer is unchanged)."""
    return fit_and_serving(model, gpu_id, fmt, context, concurrency, engine_id, kv_cache_dtype, data_dir, arch,
                           repo, substitute, gpus, settings, gguf_files, load, cpu_offload_gb)[0]


def fit_and_serving(model: str, gpu_id: str, fmt: str, context: int = 8192, concurrency: int = 1,
                    engine_id: str | None = None, kv_cache_dtype: str = "bf16", data_dir: Path | None = None,
                    arch: Architecture | None = None, repo: str | None = None, substitute: bool = True,
                    gpus: int | None = None, settings: dict[str, Any] | None = None,
                    gguf_files: dict[str, Any] | None = None, load: Any = None,  # noqa: ANN401 - a Workload
                    cpu_offload_gb: float | None = None) -> tuple[dict[str, Any], Any]:
    """:func:`fit_result` and the :class:`sizing_core.serving.Serving` at the load behind its ``serving`` object
    (None without a load or a deployment), for callers that price it (``models --fits``, ``compare``)."""
    if arch is None:
        if data_dir is None:
            from pipeline.settings import settings

            data_dir = settings().data_dir
        ref = resolve_model(model, data_dir)
        arch = load_ref(ref)
        repo = model_repo(ref, arch)
    gpu = get_gpu(gpu_id)
    if load is not None:  # memory for the pool at max_model_len = context; llama.cpp: its slots
        from sizing_core.serving import memory_requests

        concurrency = memory_requests(get_engine(engine_id) if engine_id else default_engine(gpu), load)
    placed, engine, substitute_used, start = place(arch, gpu, fmt, context, concurrency, engine_id,
                                                   kv_cache_dtype, substitute, gpus, settings)
    plan = placed.plan
    serving = serving_answer(arch, gpu, engine, placed, start, load, cpu_offload_gb) if load is not None else None
    throughput = estimate(arch, gpu, engine, placed) if plan else None
    batched = None
    if throughput is not None and throughput.max_concurrent_requests > 1:
        batched = estimate(arch, gpu, engine, placed, batch=throughput.max_concurrent_requests)
    from sizing_core.serving.scheduler import launch_states_running

    launched = placed  # at a load, vLLM runs as many sequences as its scheduler does, not the memory plan's one
    if serving is not None and launch_states_running(engine):
        launched = placed.model_copy(update={"concurrency": serving.max_running})
    launch = launch_command(launched, repo or arch.model, **known_sources(placed, repo or arch.model,
                                                                        arch.native.weight_format, gguf_files),
                            engine=engine) if plan else None
    fewest_count = placed.gpus  # `--gpu H100:2`: also the fewest that hold it
    if gpus is not None:
        fewest_count = place(arch, gpu, fmt, context, concurrency, engine_id, kv_cache_dtype, substitute, None,
                             settings)[0].gpus
    memory = None
    if plan is not None:
        largest = plan.largest_stage
        memory = largest.model_dump(mode="json", exclude={"stage", "layers"}) | {
            "usable": plan.usable_gib, "headroom": plan.headroom_gib, "stage": largest.stage}
    result = {
        "model": arch.model, "gpu": gpu.id, "gpuName": gpu.name, "engine": engine.id, "format": fmt,
        "weightFormat": placed.weight_format, "context": context, "concurrency": concurrency,
        "kvCacheDtype": kv_cache_dtype, "gpus": placed.gpus, "fits": placed.fits,
        "nativeSupport": placed.native_support, "supportNote": placed.support_note,
        "reason": placed.reason, "usableMemoryRule": engine.usable_rule, "gpuMemory": gpu.memory_source,
        "plan": plan.model_dump(mode="json") if plan else None, "memoryPerGpuGiB": memory,
        "throughput": throughput.model_dump(mode="json") if throughput else None,
        "launch": launch.model_dump(mode="json") if launch else None,
        "throughputAtMaxConcurrency": None if throughput is None else {
            "batch": batched.batch if batched else throughput.batch,
            "aggregateTokensPerS": (batched or throughput).aggregate_tokens_per_s,
            "aggregateTokensPerSRange": (batched or throughput).aggregate_tokens_per_s_range},
        "gpuKind": gpu.kind, "warnings": _warnings(arch, gpu, plan),
        "substitute": substitute_used, "limitedBy": _limit(arch, gpu, engine, placed.format, placed, start, gpus),
        "gpusAsked": gpus, "engineStartup": startup_json(start, engine, gpu, arch), "fewestGpus": fewest_count,
    }
    if load is not None:  # `serving`: the steady state at the load (keys are a contract: docs/cli.md)
        result["serving"] = serving.to_json() if serving is not None else None
    return result, serving


def serving_answer(arch: Architecture, gpu: GPU, engine: Engine, placed: Placement, start: EngineStartup | None,
                   load: Any, cpu_offload_gb: float | None = None) -> Any:  # noqa: ANN401 - Workload, Serving
    """:func:`sizing_core.serving.serve` of the placement at the load, None without a deployment (the same call
    ``cheapest`` makes per setup: :func:`sizing_core.serving.service_level.serve_layout`)."""
    from sizing_core.serving.service_level import serve_layout

    plan = placed.plan
    if plan is None or not placed.fits:
        return None
    return serve_layout(arch, gpu, engine, placed.format, plan.tensor_parallel, plan.pipeline_parallel, plan.nodes,
                        load, placed.context, placed.kv_cache_dtype, placed.native_support, start=start,
                        cpu_offload_gb=cpu_offload_gb)


def planned_arch(arch: Architecture, context: int) -> Architecture:
    """The model as ``fit`` plans it at ``context``: above max_position_embeddings answered as ``size`` answers it
    (the memory such a context would take; :func:`with_context` says so), not refused."""
    if arch.max_context is not None and context > arch.max_context:
        return arch.model_copy(update={"max_context": None})
    return arch


def above_context(arch: Architecture, limit: Any, context: int) -> str:  # noqa: ANN401 - a ContextLimit
    """The warning of an answer above the model's maximum context."""
    return (f"{context:,} tokens is above {arch.model}'s maximum context ({limit.method}): the memory it would "
            "take, not a context the model serves")


def with_context(result: dict[str, Any], arch: Architecture, limit: Any, context: int) -> dict[str, Any]:  # noqa: ANN401
    """``fit``'s answer with the context limit: ``contextLimit`` and ``aboveMaxContext`` (added keys), a warning
    above the limit (the memory such a context would take, as ``size`` shows it), and the rope-scaling flags in
    the launch command when the context needs the scaling turned on (``--rope-scaling``)."""
    from pipeline.cli.args import context_json

    above = not limit.allows(context)
    result = result | {"contextLimit": context_json(limit), "aboveMaxContext": above}
    if above:
        result["warnings"] = [*result["warnings"], above_context(arch, limit, context)]
    launch = result.get("launch")
    if launch and limit.source == "--rope-scaling" and arch.max_context is not None and context > arch.max_context:
        launch = dict(launch)
        launch["command"] += rope_flags(launch["engine"], limit)
        result["launch"] = launch
    return result


def rope_flags(engine_id: str, limit: Any) -> str:  # noqa: ANN401 - a ContextLimit
    """Turning the rope scaling on at load time, per engine (Qwen3's model card gives the vLLM and llama.cpp forms)."""
    scaling = {"rope_type": limit.rope_type, "factor": limit.factor,
               "original_max_position_embeddings": limit.original}
    return get_engine(engine_id).rope_flags(scaling)

