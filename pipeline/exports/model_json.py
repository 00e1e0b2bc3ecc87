"""Build ``models/<id>.json``: seed 004's keys with the same types and meanings, plus our additions."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from pipeline.compute.service_setups import load_answer_serving
from pipeline.compute.serving_cache import ServingCache
from pipeline.compute.setups import Setup
from pipeline.compute.tracked import Tracked
from pipeline.exports.runs_with import runs_with
from pipeline.exports.schema import (
    COLUMNS,
    SEED_GPUS,
    ByFormat,
    GpuNeeded,
    GpusNeeded,
    KVRow,
    Lab,
    ModelExport,
    Plans,
    PlanSummary,
)
from pipeline.settings import variable
from sizing_core import Architecture, SizingReport
from sizing_core.engines import default_engine, get_engine
from sizing_core.finetune import finetune_memory
from sizing_core.gpus import GPU, catalog, get_gpu
from sizing_core.launch import known_sources, launch_command
from sizing_core.placement.search import Placement, fewest_gpus
from sizing_core.throughput import estimate

SCENARIO = "one request of 8192 tokens, BF16 KV cache; vLLM on data-center GPUs, llama.cpp elsewhere"
KV_CONTEXTS = (8192, 32768, 131072, 1048576)
FAITHFUL = ("native", "bf16", "fp8", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "awq_int4")


def site_url() -> str:
    return variable("VRAMLAB_SITE_URL").text().rstrip("/")


def column_format(engine_id: str, column: str, gpu: GPU) -> str:
    """The format that stands for a seed column on an engine (``Engine.substitute_format``, the stand-ins' one
    home): 8-bit is FP8 (INT8 without FP8) with vLLM and Q8_0 with llama.cpp; 4-bit is AWQ with vLLM (at its own
    size) and Q4_K_M with llama.cpp."""
    return get_engine(engine_id).substitute_format(column, gpu)


def architecture_text(arch: Architecture) -> str:
    """"93 layers · MLA (512 + 64 latent) on 24 · 69 Kimi Delta Attention", as seed 004 writes it: each mixer kind
    states itself (``Kind.describe``), the caches that grow with context first (``Kind.text_rank``), layers without
    a mixer as MLP-only."""
    counts: dict[str, int] = {}
    first: dict[str, Any] = {}
    for layer in arch.layers:
        kind = layer.mixer.kind if layer.mixer else "none"
        counts[kind] = counts.get(kind, 0) + 1
        first.setdefault(kind, layer.mixer)

    def order(kind: str) -> tuple[bool, int, str]:
        rank = first[kind].text_rank if first[kind] is not None else None
        return (rank is None, rank or 0, kind)

    parts = [f"{arch.num_layers} layers"]
    for kind in sorted(counts, key=order):
        mixer = first[kind]
        parts.append(mixer.describe(counts[kind]) if mixer is not None else f"{counts[kind]} MLP-only")
    return " · ".join(parts)


def released_date(listed: str | None, hub_created_at: str | None) -> str | None:
    """The watchlist's release date, else the UTC day the Hub repo was created (``createdAt`` of the model API)."""
    if listed:
        return listed
    if not hub_created_at:
        return None
    created = datetime.fromisoformat(hub_created_at.replace("Z", "+00:00"))
    return (created.astimezone(UTC) if created.tzinfo else created).date().isoformat()


def js_numbers(obj: Any) -> Any:  # noqa: ANN401 - any JSON value
    """Write numbers as JavaScript does (seed 004 is JavaScript output): a whole float is an integer (``106``,
    ``27``), other floats unchanged. Strict parsers (Go, serde) then read integer fields as integers."""
    if isinstance(obj, float) and obj.is_integer() and abs(obj) < 2**53:
        return int(obj)
    if isinstance(obj, dict):
        return {k: js_numbers(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [js_numbers(v) for v in obj]
    return obj


def page_slug(model_id: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", model_id.lower()).strip("-")


def gpus_needed(arch: Architecture) -> tuple[GpusNeeded, dict[str, Placement]]:
    rows, placements = [], {}
    for gpu_id in SEED_GPUS:
        gpu = get_gpu(gpu_id)
        engine = default_engine(gpu)
        by_format: dict[str, int | None] = {}
        plans: dict[str, PlanSummary | None] = {}
        for column in COLUMNS:
            fmt = column_format(engine.id, column, gpu)
            placed = fewest_gpus(arch, gpu, engine, fmt, 8192, 1, "bf16")
            placements[f"{gpu_id}:{column}"] = placed
            by_format[column] = placed.gpus
            plans[column] = None if placed.plan is None else PlanSummary(
                tensorParallel=placed.plan.tensor_parallel, pipelineParallel=placed.plan.pipeline_parallel,
                nodes=placed.plan.nodes, engine=engine.name, format=fmt, nativeSupport=placed.native_support)
        memory = gpu.memory_bytes / 2**30 if gpu.kind in ("apple", "unified") else gpu.memory_gb
        rows.append(GpuNeeded(gpu=gpu_id, name=gpu.name, memoryGB=round(memory), engine=engine.name,
                              byFormat=ByFormat(**by_format), plans=Plans(**plans)))
    return GpusNeeded(scenario=SCENARIO, gpus=rows), placements


def recommendations(single_fit: dict[str, set[str]], cheapest: list[Setup]) -> dict[str, Any]:
    """Seed 000's recommendation boxes: best single GPU, best value, Apple unified memory, cheapest cloud.
    ``single_fit`` (from the sizing grid, 8K context, default engine): GPU id -> formats that fit on one GPU."""
    def one_gpu(gpu: GPU) -> str | None:
        fits = single_fit.get(gpu.id, set())
        return next((fmt for fmt in FAITHFUL if fmt in fits), None)

    gpus = sorted(catalog().values(), key=lambda g: g.memory_bytes)
    single = next(((g, f) for g in gpus if g.kind not in ("apple", "unified") and (f := one_gpu(g))), None)
    value = min(((g, f) for g in gpus if g.kind in ("consumer", "workstation") and g.launch_msrp_usd
                 and (f := one_gpu(g))), key=lambda x: x[0].launch_msrp_usd or 0, default=None)
    apple = next(((g, f) for g in gpus if g.kind == "apple" and (f := one_gpu(g))), None)
    box = lambda pair: None if pair is None else {"gpu": pair[0].id, "name": pair[0].name, "format": pair[1]}  # noqa: E731
    return {"bestSingleGpu": box(single) or {"note": "Multi-GPU required"}, "bestValue": box(value),
            "appleUnifiedMemory": box(apple) or {"note": "exceeds the largest Mac's GPU share"},
            "cloudFrom": cheapest[0].model_dump(mode="json") if cheapest else None}


#: the model file's fields that depend only on the model (revision, Hub facts), the GPU catalog and the code, not
#: on prices or the run: computed once per model revision and cached across runs (``export_cache``)
STATIC_FIELDS = ("parameters", "activeParameters", "activeParametersModelCard", "maxContext", "architecture",
                 "weightsGiB", "kvCacheGiBPerRequest", "recurrentStateGiBPerRequest", "gpusNeeded", "runsWith",
                 "throughput", "fineTuning", "parameterCounts")


def static_export(t: Tracked, report: SizingReport) -> dict[str, Any]:
    """The price-independent part of the model file (validated when the file is assembled; stored as JSON by
    ``pipeline/exports/static_cache.py``): its :data:`STATIC_FIELDS`, the sizing
    report's provenance keys, the exact planner's count of every gpusNeeded cell (keyed as the sizing grid is:
    model, format, context, GPU, engine) and the launch command used when no setup is rentable."""
    arch = t.arch
    assert arch is not None
    entry = t.entry
    needed, placements = gpus_needed(arch)
    cells = []
    for key, placed in placements.items():
        gpu_id, column = key.split(":")
        gpu = get_gpu(gpu_id)
        engine_id = default_engine(gpu).id
        cells.append({"model_id": entry.id, "format": column_format(engine_id, column, gpu), "context": 8192,
                      "gpu_id": gpu_id, "engine": engine_id, "json_column": column, "exact_gpus": placed.gpus,
                      "exact_reason": None if placed.gpus is not None else (
                          placed.reason or placed.support_note or "no plan")})
    h100 = placements["h100:native"] if placements["h100:native"].plan else placements["h100:bf16"]
    speed = {}
    for key, placed in placements.items():
        if placed.plan is not None:
            gpu = get_gpu(placed.gpu)
            th = estimate(arch, gpu, get_engine(placed.engine), placed)
            speed[key] = {"gpus": placed.gpus, "decodeTokensPerS": th.decode_tokens_per_s,
                          "prefillTokensPerS": th.prefill_tokens_per_s, "ttftMs": th.ttft_ms,
                          "decodeTokensPerSRange": list(th.decode_tokens_per_s_range)
                          if th.decode_tokens_per_s_range else None,
                          "prefillTokensPerSRange": list(th.prefill_tokens_per_s_range)
                          if th.prefill_tokens_per_s_range else None}
    fine = {m: finetune_memory(arch, m, seq_len=2048, batch=1).model_dump(mode="json") for m in ("qlora", "lora", "full")}
    fallback = None
    if h100.plan is not None:
        cmd = launch_command(h100, entry.repo, **known_sources(h100, entry.repo, arch.native.weight_format,
                                                               t.hub.gguf_files if t.hub else None))
        fallback = cmd.model_dump(mode="json") if cmd else None
    kv = [KVRow(context=r.context, bf16=r.bf16, fp8=r.fp8) for r in report.kv_cache_gib_per_request
          if r.context in KV_CONTEXTS and r.within_max_context]
    fields = {"parameters": report.parameters, "activeParameters": report.active_parameters,
              "activeParametersModelCard": report.active_parameters_model_card,
              "maxContext": report.max_context, "architecture": architecture_text(arch),
              "weightsGiB": report.weights_gib, "kvCacheGiBPerRequest": kv,
              "recurrentStateGiBPerRequest": report.recurrent_state_gib_per_request,
              "gpusNeeded": needed, "runsWith": runs_with(arch),
              "throughput": {"scenario": SCENARIO, "cells": speed}, "fineTuning": fine,
              "parameterCounts": report.parameter_counts.model_dump(mode="json")}
    assert tuple(fields) == STATIC_FIELDS
    return {"fields": fields, "sized": {"architectureSource": report.architecture_source,
                                        "sizingNotes": report.notes},
            "exact_cells": cells, "launch_fallback": fallback}


def best_setup_launch(t: Tracked, static: dict[str, Any], best: Setup) -> dict[str, Any] | None:
    """The launch command of the model's cheapest setup. It depends only on the model, the GPU, the instance
    size, the engine and the format, not on the price, so it is kept in the model's cached static part
    (``static["launches"]``: re-planning it cost a placement per model file each hour); a new entry is
    what :class:`~pipeline.exports.static_cache.StaticCache` saves back."""
    key = f"{best.gpu}:{best.gpus_per_instance}:{best.engine}:{best.format}"
    launches = static.setdefault("launches", {})
    if key not in launches:
        assert t.arch is not None
        placed = fewest_gpus(t.arch, get_gpu(best.gpu).model_copy(update={"max_gpus_per_node": best.gpus_per_instance}),
                             get_engine(best.engine), best.format)
        cmd = launch_command(placed, t.entry.repo, **known_sources(placed, t.entry.repo, t.arch.native.weight_format,
                                                                   t.hub.gguf_files if t.hub else None))
        launches[key] = cmd.model_dump(mode="json") if cmd else None
    return launches[key]


def assemble_model_export(t: Tracked, static: dict[str, Any], on_demand: list[Setup], spot: list[Setup],
                          verified: str | None, provenance: dict[str, Any], updated: str,
                          single_fit: dict[str, set[str]], by_load: list[dict[str, Any]] | None = None,
                          served: ServingCache | None = None) -> ModelExport:
    """The model file from its :func:`static_export` part and what this run priced (``served``: the layouts
    earlier runs served, :mod:`pipeline.compute.serving_cache`)."""
    arch = t.arch
    assert arch is not None
    entry = t.entry
    best = on_demand[0] if on_demand else None
    launch = static["launch_fallback"]
    if best is not None:
        launch = best_setup_launch(t, static, best)
    slug = page_slug(entry.id)
    hub = t.hub
    return ModelExport.model_validate({
        "id": entry.id, "name": entry.name, "repo": entry.repo, "lab": Lab(name=entry.lab, country=entry.country),
        "released": released_date(entry.released, hub.created_at if hub else None),
        "page": f"{site_url()}/vram-requirements/{slug}",
        "calculator": f"{site_url()}/llm-vram-calculator?model={entry.id}",
        **static["fields"],
        "ggufFiles": hub.gguf_files if hub else None, "verified": verified, "updated": updated,
        "cheapestSetups": [s.model_dump(mode="json") for s in on_demand],
        "spotSetups": [s.model_dump(mode="json") for s in spot], "launch": launch,
        "cheapestSetupsByLoad": [load_answer_serving(arch, answer, cache=served, model=(entry.id, t.revision or ""))
                                 for answer in by_load or []],
        "recommendations": recommendations(single_fit, on_demand),
        "derived": {k: v.model_dump() for k, v in hub.derived.items()} if hub else {},
        "provenance": provenance | {"revision": t.revision}})


def build_model_export(t: Tracked, report: SizingReport, on_demand: list[Setup], spot: list[Setup],
                       verified: str | None, provenance: dict[str, Any], updated: str,
                       single_fit: dict[str, set[str]], exact_cells: list[dict[str, Any]] | None = None) -> ModelExport:
    """The model file. ``exact_cells`` (optional) receives the exact planner's count of every gpusNeeded cell, keyed
    as the sizing grid is (model, format, context, GPU, engine), so the published grid can carry the same count."""
    static = static_export(t, report)
    if exact_cells is not None:
        exact_cells += static["exact_cells"]
    return assemble_model_export(t, static, on_demand, spot, verified, provenance, updated, single_fit)
