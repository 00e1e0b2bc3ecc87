"""The hourly refresh: one schedule over the whole graph, in UTC, that never overlaps itself.

Two guards: the schedule skips a tick while ANY run is queued or in progress in this instance (a run launched
from the UI carries no refresh tag but writes the same DuckDB file and landing: issue #16), and dagster.yaml
limits runs tagged ``vramlab/refresh`` to one at a time (for runs queued by other means). Runs that touch DuckDB
are also kept apart step by step by the ``duckdb`` pool, however they were started.
"""

import dagster as dg

REFRESH_TAG = {"vramlab/refresh": "hourly"}
ACTIVE = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING,
          dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]


@dg.schedule(name="hourly_refresh", cron_schedule="0 * * * *", execution_timezone="UTC",
             target=dg.AssetSelection.all(), tags=REFRESH_TAG,
             description="Fetch every source, load DuckDB, size, publish; skipped while the previous run is active.")
def hourly_refresh(context: dg.ScheduleEvaluationContext) -> dg.RunRequest | dg.SkipReason:
    active = context.instance.get_runs_count(dg.RunsFilter(statuses=ACTIVE))
    if active:
        return dg.SkipReason(f"{active} run(s) still active (refresh, UI or CLI): not starting another")
    return dg.RunRequest(tags=REFRESH_TAG)
