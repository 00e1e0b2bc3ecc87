"""The hourly refresh: one schedule over the whole graph, in UTC, that never overlaps itself.

Two guards: the schedule skips a tick while a run it started is still queued or in progress, and dagster.yaml
limits runs tagged ``vramlab/refresh`` to one at a time (for runs queued by other means).
"""

import dagster as dg

REFRESH_TAG = {"vramlab/refresh": "hourly"}
#: the whole graph as one named job: the schedule and ``vramlab run`` both run it, so the UI lists every refresh
#: under one name and the run limit on ``vramlab/refresh`` covers both
REFRESH_JOB = "vramlab_refresh"

vramlab_refresh = dg.define_asset_job(REFRESH_JOB, selection=dg.AssetSelection.all(), tags=REFRESH_TAG,
                                      description="Fetch every source, load DuckDB, size, publish a snapshot.")
ACTIVE = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING,
          dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]


@dg.schedule(name="hourly_refresh", cron_schedule="0 * * * *", execution_timezone="UTC",
             target=vramlab_refresh, tags=REFRESH_TAG,
             description="Fetch every source, load DuckDB, size, publish; skipped while the previous run is active.")
def hourly_refresh(context: dg.ScheduleEvaluationContext) -> dg.RunRequest | dg.SkipReason:
    active = context.instance.get_runs_count(dg.RunsFilter(tags=REFRESH_TAG, statuses=ACTIVE))
    if active:
        return dg.SkipReason(f"{active} refresh run(s) still active: not starting another")
    return dg.RunRequest(tags=REFRESH_TAG)
