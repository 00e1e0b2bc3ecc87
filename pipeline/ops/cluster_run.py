"""One refresh on the Celery workers of a running ``LocalCluster`` (``python -m pipeline.ops.cluster_run``, with the
cluster's environment): prints the run id, its success, the worker process of each step and each step's seconds as one JSON line."""

from __future__ import annotations

import json
import os

import dagster as dg

from pipeline import definitions


def main() -> int:
    if not os.environ.get("VRAMLAB_CELERY_BROKER"):
        raise SystemExit("VRAMLAB_CELERY_BROKER is not set: start the cluster first (scripts/cluster.py up)")
    with dg.DagsterInstance.get() as instance:
        result = dg.execute_job(dg.reconstructable(definitions.celery_refresh_job), instance=instance)
        steps, started, seconds = {}, {}, {}
        for record in instance.all_logs(result.run_id):
            event = record.dagster_event
            if event and event.step_key and event.event_type_value == "STEP_START":
                steps[event.step_key] = event.pid  # the worker process that ran the step
                started[event.step_key] = record.timestamp
            elif event and event.step_key and event.event_type_value in ("STEP_SUCCESS", "STEP_FAILURE"):
                seconds[event.step_key] = round(record.timestamp - started.get(event.step_key, record.timestamp), 2)
    print(json.dumps({"run_id": result.run_id, "success": result.success, "steps": steps, "seconds": seconds}))
    return 0 if result.success else 1


if __name__ == "__main__":
    raise SystemExit(main())
