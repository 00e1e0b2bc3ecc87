"""One refresh on the Celery workers of a running ``LocalCluster`` (``python -m pipeline.ops.cluster_run``, with the
cluster's environment): prints the run id, its success, the worker process of each step and each step's seconds and the
errors the run met as one JSON line."""

from __future__ import annotations

import json

import dagster as dg

from pipeline import definitions
from pipeline.ops.liveness import owner_tags, release_dead_runs
from pipeline.settings import variable


def main() -> int:
    if not variable("VRAMLAB_CELERY_BROKER").text():
        raise SystemExit("VRAMLAB_CELERY_BROKER is not set: start the cluster first (scripts/cluster.py up)")
    with dg.DagsterInstance.get() as instance:
        release_dead_runs(instance)  # a killed orchestrating process of an earlier refresh
        result = dg.execute_job(dg.reconstructable(definitions.celery_refresh_job), instance=instance,
                                tags=owner_tags("cluster"))
        if not result.success:
            # a step killed on its worker, or the broker gone, fails the run; no daemon runs beside the cluster to
            # give its pool slots back, so this process does
            instance.event_log_storage.free_concurrency_slots_for_run(result.run_id)
        steps, started, seconds, errors = {}, {}, {}, []
        for record in instance.all_logs(result.run_id):
            event = record.dagster_event
            error = getattr(event.event_specific_data, "error", None) if event else None
            if error is not None and error.message.strip() not in errors:
                errors.append(error.message.strip())  # e.g. a step whose Celery worker was lost
            if event and event.step_key and event.event_type_value == "STEP_START":
                steps[event.step_key] = event.pid  # the worker process that ran the step
                started[event.step_key] = record.timestamp
            elif event and event.step_key and event.event_type_value in ("STEP_SUCCESS", "STEP_FAILURE"):
                seconds[event.step_key] = round(record.timestamp - started.get(event.step_key, record.timestamp), 2)
    print(json.dumps({"run_id": result.run_id, "success": result.success, "steps": steps, "seconds": seconds,
                      "errors": errors}))
    return 0 if result.success else 1


if __name__ == "__main__":
    raise SystemExit(main())
