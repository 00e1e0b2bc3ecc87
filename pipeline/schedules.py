"""The hourly refresh: one job over the whole graph, run by a schedule in UTC that never overlaps itself.

Two guards: the schedule skips a tick while ANY run is queued or in progress in this instance (a run launched
from the UI carries no refresh tag but writes the same DuckDB file and landing), and dagster.yaml
limits runs tagged ``vramlab/refresh`` to one at a time (for runs queued by other means).

Executors (docs/decisions.md): the refresh job runs under Dagster's **multiprocess executor**, each step in its
own process as the Kubernetes and Celery executors run them, so moving to those is a change of executor, not of
code. Step processes start from a forkserver that has already imported the code location (``preload_modules``),
so a step starts in a fraction of a second instead of re-importing Dagster, polars and DuckDB (~8 s each on a
busy 2-core machine with the default ``spawn``); ``max_concurrent`` 2 matches the machine, and the ``duckdb`` pool
(dagster.yaml) still lets one DuckDB step run at a time. Everything else (UI "Materialize all", ``vramlab run``,
tests) uses the in-process executor set in definitions.py: one process, no start-up per step; the raw price
sources are fetched concurrently inside their one step either way.
"""


import dagster as dg

from pipeline.executors import celery_executor
from pipeline.settings import variable

#: the hourly cron; ``VRAMLAB_SCHEDULE_CRON`` overrides it (tests use every minute)
SCHEDULE_CRON = variable("VRAMLAB_SCHEDULE_CRON").text()
#: the schedule is off until someone turns it on, except under ``vramlab serve``, which sets VRAMLAB_SCHEDULE_ON=1
#: for the daemon and webserver it starts: there it is on by default (and can still be stopped in the UI)
SCHEDULE_ON = variable("VRAMLAB_SCHEDULE_ON").on()

REFRESH_TAG = {"vramlab/refresh": "hourly"}
#: the whole graph as the job ``vramlab run`` runs (in process), tagged like the scheduled hourly_refresh_job so the
#: run limit on ``vramlab/refresh`` and the schedule's skip-while-active guard cover both
REFRESH_JOB = "vramlab_refresh"
#: the whole unpartitioned graph (the partitioned one, group "parts", has its own jobs: pipeline/assets/partitioned.py)
WHOLE_GRAPH = dg.AssetSelection.all() - dg.AssetSelection.groups("parts")

vramlab_refresh = dg.define_asset_job(REFRESH_JOB, selection=WHOLE_GRAPH, tags=REFRESH_TAG,
                                      description="Fetch every source, load DuckDB, size, publish a snapshot.")
ACTIVE = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING,
          dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]

#: the refresh job's executor: a process per step (as dagster-k8s / dagster-celery run steps), forked from a
#: server that preloaded the code location
REFRESH_EXECUTOR = dg.multiprocess_executor.configured(
    {"max_concurrent": 2, "start_method": {"forkserver": {"preload_modules": ["pipeline.definitions"]}}},
    name="refresh_multiprocess")

hourly_refresh_job = dg.define_asset_job(
    "hourly_refresh_job", selection=WHOLE_GRAPH, executor_def=REFRESH_EXECUTOR, tags=REFRESH_TAG,
    description="Fetch every source, load DuckDB, size what changed, recompute setups, publish (multiprocess).")


@dg.schedule(name="hourly_refresh", cron_schedule=SCHEDULE_CRON, execution_timezone="UTC", job=hourly_refresh_job,
             tags=REFRESH_TAG, default_status=dg.DefaultScheduleStatus.RUNNING if SCHEDULE_ON
             else dg.DefaultScheduleStatus.STOPPED,
             description="Fetch every source, load DuckDB, size, publish; skipped while the previous run is active.")
def hourly_refresh(context: dg.ScheduleEvaluationContext) -> dg.RunRequest | dg.SkipReason:
    active = context.instance.get_runs_count(dg.RunsFilter(statuses=ACTIVE))
    if active:
        return dg.SkipReason(f"{active} run(s) still active (refresh, UI or CLI): not starting another")
    return dg.RunRequest(tags=REFRESH_TAG)


#: set in every process of a Celery deployment (pipeline/ops/cluster.py, docs/operating.md): the broker's URL
CELERY_BROKER = variable("VRAMLAB_CELERY_BROKER").text()


def celery_jobs() -> list:
    """The refresh job with its steps sent to ``dagster-celery`` workers, when a broker is configured (no Celery
    import otherwise: the single-host install never pays for it)."""
    if not CELERY_BROKER:
        return []
    executor = celery_executor(CELERY_BROKER, name="celery")
    return [dg.define_asset_job("celery_refresh_job", selection=WHOLE_GRAPH, executor_def=executor,
                                tags=REFRESH_TAG, description="The refresh job with each step on a Celery worker.")]
