"""Dagster code location for vramlab (``workspace.yaml`` and ``[tool.dg]`` both point here). Thin glue: the assets
call the pipeline's plain functions; policies (resources, schedule) are applied here, in one place."""

import dagster as dg

from pipeline.assets.core import CORE_ASSETS
from pipeline.assets.out import OUT_ASSETS
from pipeline.assets.partitioned import PARTITIONED_ASSETS, PARTITIONED_JOBS, celery_partition_jobs
from pipeline.assets.quality import QUALITY_ASSETS
from pipeline.assets.raw import RAW_ASSETS
from pipeline.resources import default_resources
from pipeline.schedules import celery_jobs, hourly_refresh, hourly_refresh_job, vramlab_refresh

ALL_ASSETS = [*RAW_ASSETS, *CORE_ASSETS, *QUALITY_ASSETS, *OUT_ASSETS]

# in-process by default (UI materializations, vramlab run): no process start-up per step; the scheduled
# hourly_refresh_job runs under the multiprocess executor (pipeline/schedules.py, docs/decisions.md)
# the partitioned graph (group "parts") beside it: its own jobs, one partitions definition each
defs = dg.Definitions(assets=[*ALL_ASSETS, *PARTITIONED_ASSETS],
                      jobs=[hourly_refresh_job, vramlab_refresh, *celery_jobs(), *PARTITIONED_JOBS,
                            *celery_partition_jobs()],
                      schedules=[hourly_refresh], resources=default_resources(), executor=dg.in_process_executor)


def refresh_job() -> dg.JobDefinition:
    """The hourly job with its resources bound (``dg.reconstructable(refresh_job)`` runs it out of process)."""
    return defs.resolve_job_def("hourly_refresh_job")


def celery_refresh_job() -> dg.JobDefinition:
    """The refresh job on Celery workers (``VRAMLAB_CELERY_BROKER`` set): ``dg.reconstructable`` of this runs it."""
    return defs.resolve_job_def("celery_refresh_job")


def parts_prices_job() -> dg.JobDefinition:
    """One price source partition per run, steps in their own processes (``pipeline/ops/partitioned.py``)."""
    return defs.resolve_job_def("parts_prices_job")


def parts_models_job() -> dg.JobDefinition:
    """One model partition per run (sizing and setups), steps in their own processes."""
    return defs.resolve_job_def("parts_models_job")


def parts_prices_celery_job() -> dg.JobDefinition:
    """``parts_prices_job`` with its step on a Celery worker (``VRAMLAB_CELERY_BROKER`` set)."""
    return defs.resolve_job_def("parts_prices_celery_job")


def parts_models_celery_job() -> dg.JobDefinition:
    """``parts_models_job`` with its steps on Celery workers (``VRAMLAB_CELERY_BROKER`` set)."""
    return defs.resolve_job_def("parts_models_celery_job")
