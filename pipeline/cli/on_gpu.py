"""A model on a GPU as ``vramlab models --fits`` and ``vramlab compare`` answer it: the most faithful format that
fits (from most to least faithful, 4-bit and above: the formats ``cheapest`` answers in), the deployment ``fit``
shows for it (:func:`pipeline.cli.fit.fit_and_serving`), the cheapest current on-demand offer running that very
plan (:func:`pipeline.cli.costs.price_plan`, what ``fit`` prices), and at a load the serving figures priced on
that offer (:func:`pipeline.compute.service_setups.serving_json`, what ``cheapest`` shows per setup).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pipeline.cli.costs import price_plan
from pipeline.cli.fit import fit_and_serving
from sizing_core import Architecture
from sizing_core.gpus import GPU


@dataclass(frozen=True)
class Question:
    """What every answer on a GPU shares: the request shape and, at a load, the load; the engine and its flags."""

    context: int = 8192
    concurrency: int = 1  # requests of `context` tokens the memory plan holds (without a load)
    load: Any = None  # a sizing_core.serving.Workload, or None
    engine: str | None = None
    kv_cache_dtype: str = "bf16"
    settings: dict[str, Any] | None = None

    @property
    def asked_concurrency(self) -> int | None:
        """The top-level ``concurrency`` of an answer's JSON: the clients of a closed-loop load, None at a rate (the
        load says it), else the requests the memory plan holds."""
        return self.concurrency if self.load is None else self.load.concurrency


def formats_to_try(fmt: str | None) -> tuple[str, ...]:
    """The formats an answer is searched in, most faithful first: the one asked, else ``cheapest``'s."""
    from pipeline.compute.answers import FIDELITY

    return (fmt,) if fmt else FIDELITY


def answers(arch: Architecture, repo: str | None, gpu: GPU, q: Question, formats: tuple[str, ...], *,
            gpus: int | None = None) -> list[tuple[dict[str, Any], Any]]:
    """``fit``'s answer (and its serving at the load) in each of ``formats`` on ``gpu``: on exactly ``gpus`` GPUs,
    else on the fewest; in the order of ``formats``. One format asked is answered as ``fit --format`` answers it
    (the engine's substitute named when it refuses the format); several, each as itself."""
    return [fit_and_serving(arch.model, gpu.id, f, q.context, q.concurrency, q.engine, q.kv_cache_dtype,
                            arch=arch, repo=repo, substitute=len(formats) == 1, gpus=gpus, settings=q.settings,
                            load=q.load) for f in formats]


def fitting(found: list[tuple[dict[str, Any], Any]], max_gpus: int | None = None) -> list[tuple[dict[str, Any], Any]]:
    """The answers that fit (on at most ``max_gpus`` GPUs), in their order."""
    return [(r, s) for r, s in found if r["fits"] and (max_gpus is None or r["gpus"] <= max_gpus)]


def row(result: dict[str, Any], serving: Any, offers: list[dict[str, Any]] | None,  # noqa: ANN401 - Serving
        load: Any = None) -> dict[str, Any]:  # noqa: ANN401 - a Workload
    """One answer as the compact row both commands print (keys are a contract: docs/cli.md): format, plan,
    memory per GPU, speed, the cheapest offer running the plan (``offer``: ``fit``'s ``cost.offer`` keys) with
    its $/h, $/1M output tokens and verification date, and at a load ``serving`` (``cheapest``'s per-setup keys,
    priced on that offer)."""
    from pipeline.compute.service_setups import serving_json

    plan, mem, speed = result["plan"] or {}, result["memoryPerGpuGiB"] or {}, result["throughput"] or {}
    offer = price_plan(result, offers) if result["fits"] and offers else None
    sub = result.get("substitute")
    out = {
        "gpu": result["gpu"], "gpuName": result["gpuName"], "fits": result["fits"],
        "format": sub["format"] if sub else result["format"], "formatAsked": result["format"],
        "weightFormat": result["weightFormat"], "engine": result["engine"], "gpus": result["gpus"],
        "tensorParallel": plan.get("tensorParallel"), "pipelineParallel": plan.get("pipelineParallel"),
        "nodes": plan.get("nodes"), "memoryPerGpuGiB": mem.get("total"), "usableGiBPerGpu": mem.get("usable"),
        "weightsGiBPerGpu": mem.get("weights"), "kvCacheGiBPerGpu": mem.get("kvCache"),
        "decodeTokensPerS": speed.get("decodeTokensPerS"), "ttftMs": speed.get("ttftMs"),
        "maxConcurrentRequests": speed.get("maxConcurrentRequests"),
        "nativeSupport": result["nativeSupport"], "limitedBy": result["limitedBy"]["kind"],
        "reason": result["reason"], "offer": offer,
        "pricePerHour": offer["pricePerHour"] if offer else None,
        "usdPerMillionTokens": offer["usdPerMillionTokens"] if offer else None,
        "verifiedAt": offer["verifiedAt"] if offer else None,
    }
    if load is not None:
        out["serving"] = serving_json(serving, out["pricePerHour"]) if serving is not None else None
    return out


def offers_of(snapshot: Any, gpu: GPU) -> list[dict[str, Any]]:  # noqa: ANN401 - a Snapshot or None
    """The snapshot's current offers of ``gpu`` (none without a snapshot): what an answer is priced on."""
    if snapshot is None:
        return []
    from pipeline.exports.snapshot_offers import current_offers

    return current_offers(snapshot, gpu=gpu.id)


def load_json(q: Question) -> dict[str, Any] | None:
    """``load`` of the answers' JSON: the load asked, or None."""
    w = q.load
    return None if w is None else {"rate": w.rate, "concurrency": w.concurrency, "inputTokens": w.input_tokens,
                                   "outputTokens": w.output_tokens}


def models_on(data_dir: Any, gpu: GPU, max_gpus: int, q: Question, fmt: str | None,  # noqa: ANN401 - a Path
              snapshot: Any) -> dict[str, Any]:  # noqa: ANN401 - a Snapshot or None
    """``vramlab models --fits GPU[:N] --json``: every tracked and bundled model on at most ``max_gpus`` x ``gpu``,
    each in the most faithful format that fits (``formats``: every format that does, most faithful first), those
    that run first (at a load those meeting the default interactive floor before the others; most faithful
    format first, then the largest), then those that do not with the reason."""
    from pipeline.cli.catalog import model_names
    from pipeline.cli.models import load_ref, model_repo
    from pipeline.cli.resolve import ResolveError, resolve_model
    from pipeline.compute.answers import fidelity_rank
    from sizing_core import SizingError
    from sizing_core.parameters import count_parameters

    offers = offers_of(snapshot, gpu)
    formats = formats_to_try(fmt)
    runs, rest = [], []
    for model_id, repo, name, _ in model_names(data_dir):
        entry: dict[str, Any] = {"id": model_id, "repo": repo, "name": name, "parameters": None}
        try:
            ref = resolve_model(model_id, data_dir)
            arch = load_ref(ref)
        except (ResolveError, SizingError) as exc:
            rest.append(entry | {"fits": False, "formats": [], "reason": str(exc)})
            continue
        entry |= {"repo": repo or ref.repo, "parameters": round(count_parameters(arch).total / 1e9, 2)}
        try:
            found = answers(arch, model_repo(ref, arch), gpu, q, formats)
        except SizingError as exc:  # a question this model cannot be asked (a context above its maximum)
            rest.append(entry | {"fits": False, "formats": [], "fewestGpus": None, "reason": str(exc)})
            continue
        good = fitting(found, max_gpus)
        if not good:
            fewest = min((r["gpus"] for r, _ in found if r["fits"]), default=None)
            rest.append(entry | {"fits": False, "formats": [], "fewestGpus": fewest, "reason": (
                f"needs at least {fewest} x {gpu.name} (" + (f"in {fmt}" if fmt else "in any format of 4 bits and "
                                                             "above; `fit` also answers q3_k_m and q2_k") + ")"
                if fewest else
                next((r["reason"] for r, _ in reversed(found) if r["reason"]), "no deployment"))})
            continue
        best, serving = good[0]
        runs.append(entry | row(best, serving, offers, q.load) | {
            "formats": [{"format": r["format"], "gpus": r["gpus"], "memoryPerGpuGiB": r["memoryPerGpuGiB"]["total"],
                         "decodeTokensPerS": (r["throughput"] or {}).get("decodeTokensPerS")} for r, _ in good]})
    # at a load, the models serving it at the default interactive floor first (a saturated one holds in memory
    # but does not serve the load)
    runs.sort(key=lambda m: (q.load is not None and not (m.get("serving") or {}).get("meetsDefaultFloor"),
                             fidelity_rank(m["format"]), -(m["parameters"] or 0), m["id"]))
    return {"gpu": gpu.id, "gpuName": gpu.name, "maxGpus": max_gpus, "context": q.context,
            "concurrency": q.asked_concurrency, "load": load_json(q), "engine": q.engine, "format": fmt,
            "snapshot": snapshot.id if snapshot else None, "fits": len(runs), "models": runs + rest}


def compare_on(arch: Architecture, repo: str | None, asked: list[tuple[GPU, int | None]], q: Question,
               fmt: str | None, snapshot: Any) -> list[dict[str, Any]]:  # noqa: ANN401 - a Snapshot or None
    """``vramlab compare``'s rows: the model on each asked GPU (exactly N of them with ``GPU:N``, else the fewest)
    in ``fmt``, else in the most faithful format that fits it; a GPU it fits in no format gets the least
    faithful answer (``fits`` false, ``reason``)."""
    rows = []
    for gpu, count in asked:
        found = answers(arch, repo, gpu, q, formats_to_try(fmt), gpus=count)
        good = fitting(found)
        result, serving = good[0] if good else found[-1]
        rows.append(row(result, serving, offers_of(snapshot, gpu) if good else None, q.load) | {"gpusAsked": count})
    return rows
