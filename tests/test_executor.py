"""The scheduled refresh job runs under Dagster's multiprocess executor (a process per step, as the Kubernetes and
Celery executors run them) on a real instance with the duckdb pool, and the default executor stays in-process."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from pipeline.definitions import defs, refresh_job
from pipeline.sources import PRICE_SOURCES


def test_refresh_job_uses_the_forkserver_multiprocess_executor_and_ui_runs_stay_in_process() -> None:
    job = defs.resolve_job_def("hourly_refresh_job")
    assert job.executor_def.name == "refresh_multiprocess"
    schedule = defs.resolve_schedule_def("hourly_refresh")
    assert schedule.job_name == "hourly_refresh_job"
    assert defs.resolve_implicit_global_asset_job_def().executor_def is dg.in_process_executor


def test_refresh_job_runs_steps_in_separate_processes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VRAMLAB_DATA_DIR", str(tmp_path / "data"))  # read by the step processes at import
    raw_and_core = [k for k in defs.resolve_asset_graph().get_all_asset_keys()
                    if not k.to_user_string().startswith(("out__", "parts__"))]  # parts: its own jobs
    with dg.instance_for_test(overrides={"concurrency": {"pools": {"default_limit": 1}}}) as instance:
        result = dg.execute_job(dg.reconstructable(refresh_job), instance=instance, asset_selection=raw_and_core,
                                tags={"vramlab/refresh": "hourly"})
        assert result.success
        pids = {}
        for record in instance.all_logs(result.run_id):
            event = record.dagster_event
            if event and event.step_key and event.event_type_value == "STEP_START":
                pids[event.step_key] = event.pid
    assert {"raw_prices", "raw_prices__ecb", "core__price_observations"} <= set(pids)
    assert os.getpid() not in pids.values() and len(set(pids.values())) == len(pids)  # one process per step
    con = duckdb.connect(str(tmp_path / "data" / "vramlab.duckdb"), read_only=True)
    sources = {r[0] for r in con.execute("SELECT DISTINCT source FROM price_observations").fetchall()}
    con.close()
    assert len(sources) == len(PRICE_SOURCES)  # every source fetched in the one concurrent raw step and loaded
