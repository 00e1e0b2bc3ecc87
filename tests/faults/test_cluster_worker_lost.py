"""A Celery worker killed mid-step (the whole worker, SIGKILL: nothing of it is left to report) fails the cluster
refresh within a bound, names the lost worker, and gives the run's ``duckdb`` pool slot back, so the next refresh
on the remaining worker runs to the end.

The fault as found: dagster-celery waits for a step's result without a bound, so a worker that died without storing
one made the refresh wait until its 900 s timeout while the run kept its pool slot. Real Postgres, redis-server and
two dagster-celery workers (``pipeline.ops.cluster``, the code behind ``scripts/cluster.py``)."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

from celery import Celery
from harness import track_few_models

from pipeline.ops.cluster import LocalCluster

#: steps that hold the ``duckdb`` pool slot while they run (pool="duckdb" in pipeline/assets)
POOLED = ("core__fetch_log", "core__price_observations", "core__offers_current", "core__gpus", "core__models",
          "out__sizing", "out__cheapest_setups", "out__exports")


def worker_running_a_pooled_step(app: Celery, deadline: float) -> str:
    """The name of the first worker seen running one of the pooled steps (polled until ``deadline``)."""
    while time.monotonic() < deadline:
        for worker, tasks in (app.control.inspect(timeout=1.0).active() or {}).items():
            if any(step in str(task.get("kwargs")) for task in tasks for step in POOLED):
                return worker
        time.sleep(0.2)
    raise AssertionError("no worker was seen running a step that holds the duckdb slot")


def test_a_worker_killed_mid_step_fails_the_run_and_frees_its_slot(tmp_path: Path) -> None:
    track_few_models(tmp_path / "cluster" / "data")
    with LocalCluster(root=tmp_path / "cluster", data_dir=tmp_path / "cluster" / "data", workers=2) as cluster:
        first: dict = {}
        refresh = threading.Thread(target=lambda: first.update(cluster.run_refresh(timeout=900)))
        refresh.start()
        app = Celery(broker=cluster.broker, backend=cluster.broker)
        victim = worker_running_a_pooled_step(app, time.monotonic() + 600)
        number = int(victim.split("@")[0].rsplit("-", 1)[1])  # workers are named vramlab-N@host
        os.killpg(cluster.processes[1 + number].pid, signal.SIGKILL)  # the worker and its pool child
        killed_at = time.monotonic()
        refresh.join(timeout=600)
        assert not refresh.is_alive(), "the refresh still waits for the lost worker"
        assert time.monotonic() - killed_at < 300  # judged lost in seconds; running steps finish first
        assert first["success"] is False
        assert any(victim in error and "is gone" in error for error in first["errors"]), first["errors"]

        second = cluster.run_refresh(timeout=900)  # would wait on the slot for ever if the first kept it
        assert second["success"], second["log"]
        assert set(second["steps"].values()), second  # it ran, on the worker that is left
