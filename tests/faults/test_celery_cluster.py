"""The refresh beyond one process: Postgres as Dagster's instance storage, Redis as the Celery
broker, two ``dagster-celery`` workers, all on 127.0.0.1, started and stopped by ``pipeline.ops.cluster`` (the
code behind ``scripts/cluster.py``). The replay refresh runs with every step on the workers; its DuckDB tables and
published files must be the same as an in-process ``vramlab run`` of the same recordings."""

from __future__ import annotations

from pathlib import Path

from harness import assert_same_results, track_few_models, vramlab_run

from pipeline.ops.cluster import LocalCluster


def test_refresh_on_two_celery_workers_equals_the_in_process_run(tmp_path: Path) -> None:
    local = tmp_path / "local"
    track_few_models(local / "data", tmp_path / "cluster" / "data")
    vramlab_run(local / "data", local / "home")
    with LocalCluster(root=tmp_path / "cluster", data_dir=tmp_path / "cluster" / "data", workers=2) as cluster:
        result = cluster.run_refresh()
    assert result["success"], result["log"]
    workers = set(result["steps"].values())
    assert len(result["steps"]) == 12 and len(workers) == 2, result["steps"]  # every step ran, on both workers
    assert_same_results(local / "data", tmp_path / "cluster" / "data")
