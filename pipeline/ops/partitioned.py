"""A partitioned refresh (``vramlab parts run``): the five jobs of ``pipeline/assets/partitioned.py`` in order, the
partitioned ones as one run per partition, ``concurrency`` runs at a time, each run's steps in their own processes
(the multiprocess executor): a local backfill. The same runs can be launched from the UI (Backfill on the
partitioned assets) or ``dagster job backfill`` with ``vramlab serve``'s daemon running (docs/operating.md).

Order: prepare (Hub models, GPU catalog, model partitions) -> the ``ecb`` partition, then every other source
partition -> consolidation of the prices -> every model partition -> consolidation of the models and publishing.
A partition run that fails is reported and the others go on; the consolidations load what the partitions wrote
(a price source without a part keeps its last offers, turning stale; a model without a current part stops
publishing, naming it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from typing import Any

from pipeline.compute.workers import die_with_parent
from pipeline.errors import UserError
from pipeline.ops.liveness import owner_tags, release_dead_runs
from pipeline.ops.run import failure_descriptions, stoppable_by_sigterm
from pipeline.settings import variable


def _pool_worker() -> None:
    """A partition process: stoppable by SIGTERM, and ended by the kernel if ``vramlab parts run`` dies."""
    stoppable_by_sigterm()
    die_with_parent()


def _run_partition(instance_ref: Any, job: str, key: str) -> tuple[str, bool, str, str]:  # noqa: ANN401 - InstanceRef
    """One partition run in a pool process: its own Dagster instance object and logging (Dagster's run set-up
    configures logging per run, which deadlocks between threads of one process), steps in their own processes."""
    import dagster as dg

    from pipeline import definitions

    target = dg.reconstructable(getattr(definitions, job))  # parts_*_job: functions of that name there
    with dg.DagsterInstance.from_ref(instance_ref) as instance:
        result = dg.execute_job(target, instance=instance, raise_on_error=False,
                                tags={"dagster/partition": key, **owner_tags("parts")})  # whose process it is
        why = "" if result.success else "; ".join(failure_descriptions(result))[:500] or "no reason recorded"
    return key, result.success, result.run_id, why


def run_partitioned(instance: Any, *, sources: Sequence[str] | None = None,  # noqa: ANN401 - a DagsterInstance
                    models: Sequence[str] | None = None, concurrency: int = 2, publish: bool = True,
                    celery: bool = False, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the partitioned graph once into the configured data directory; returns each run's outcome:
    ``{"prepare": ok, "sources": {key: ok}, "offers": ok, "models": {key: ok}, "publish": ok, "seconds": s,
    "failures": {"job[key]": "run <id>: why"}}`` (each failed partition run with its own reasons).
    ``celery``: the partition runs' steps go to the Celery workers (``VRAMLAB_CELERY_BROKER``, docs/operating.md)."""
    from pipeline.assets.partitions import MODELS, SOURCES
    from pipeline.definitions import defs

    if celery and not variable("VRAMLAB_CELERY_BROKER").text():
        raise UserError("--celery needs VRAMLAB_CELERY_BROKER (start the workers first: scripts/cluster.py up)")
    prices_job, models_job = ("parts_prices_celery_job", "parts_models_celery_job") if celery else \
        ("parts_prices_job", "parts_models_job")
    known_sources = list(SOURCES)
    unknown = [s for s in sources or () if s not in SOURCES]
    if unknown:
        raise UserError(f"unknown price source partition(s): {', '.join(unknown)} (known: {', '.join(known_sources)})")
    started = time.monotonic()
    release_dead_runs(instance, log)  # a killed parts run left its runs STARTED, holding the duckdb slot
    ref = instance.get_ref()  # partition runs record into the same (persistent) instance from their processes
    out: dict[str, Any] = {"sources": {}, "models": {}, "failures": {}}

    def in_process(job: str) -> bool:
        result = defs.resolve_job_def(job).execute_in_process(instance=instance, raise_on_error=False,
                                                              tags=owner_tags("parts"))
        log(f"{job}: {'ok' if result.success else 'FAILED'} (run {result.run_id[:8]})")
        return result.success

    def backfill(job: str, keys: list[str]) -> dict[str, bool]:
        if not keys:
            return {}
        done = {}
        with ProcessPoolExecutor(max_workers=max(1, min(concurrency, len(keys))), mp_context=get_context("spawn"),
                                 initializer=_pool_worker) as pool:
            futures = [pool.submit(_run_partition, ref, job, key) for key in keys]
            for future in as_completed(futures):
                key, ok, run_id, why = future.result()
                log(f"{job}[{key}]: {'ok' if ok else 'FAILED'} (run {run_id[:8]})" + (f": {why}" if why else ""))
                done[key] = ok
                if why:
                    out["failures"][f"{job}[{key}]"] = f"run {run_id}: {why}"
        return {k: done[k] for k in keys}

    out["prepare"] = in_process("parts_prepare_job")
    if not out["prepare"]:
        out["seconds"] = time.monotonic() - started
        return out
    # the model partitions are known once prepare registered them: an unknown one is said before any fetch
    registered = instance.get_dynamic_partitions(MODELS)
    unknown = [m for m in models or () if m not in registered]
    if unknown:
        raise UserError(f"unknown model partition(s): {', '.join(unknown)} (registered by discovery: "
                        f"{len(registered)}; `vramlab models` lists the tracked ids)")
    chosen = list(sources) if sources else known_sources
    first = [k for k in chosen if k == "ecb"]  # the currency first: the other sources convert with its rates
    out["sources"] = backfill(prices_job, first) | backfill(prices_job, [k for k in chosen if k not in first])
    out["offers"] = in_process("parts_offers_job")
    if out["offers"]:
        out["models"] = backfill(models_job, list(models) if models else list(registered))
        if publish:
            out["publish"] = in_process("parts_publish_job")
    out["seconds"] = time.monotonic() - started
    return out
