"""The partitioned refresh on Celery workers: Postgres instance storage, Redis broker, two
``dagster-celery`` workers (``pipeline.ops.cluster.LocalCluster``); every source and model partition is a run whose
steps run on the workers, writing Parquet parts side by side; the consolidation steps run in the orchestrating
process. Tables and published files must equal an in-process ``vramlab run``'s."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
from harness import ROOT, assert_same_results, track_few_models, vramlab_run

from pipeline.assets.partitions import SOURCES
from pipeline.ops.cluster import LocalCluster

VRAMLAB = Path(sys.executable).parent / "vramlab"


def test_partitioned_refresh_on_two_celery_workers_equals_the_in_process_run(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    local = tmp_path / "local"
    models = track_few_models(local / "data", tmp_path / "cluster" / "data")
    vramlab_run(local / "data", local / "home")
    with LocalCluster(root=tmp_path / "cluster", data_dir=tmp_path / "cluster" / "data", workers=2) as cluster:
        out = subprocess.run([str(VRAMLAB), "parts", "run", "--celery", "--json"], cwd=ROOT, env=cluster.env(),
                             capture_output=True, text=True, timeout=3000)
        said = (out.stdout.strip().splitlines() or [""])[-1]
        outcome = json.loads(said) if said.startswith("{") else {}
        assert out.returncode == 0, f"failed runs: {outcome.get('failures')}\n{said[:2000]}\n{out.stderr[-4000:]}"
        monkeypatch.setenv("DAGSTER_PG_PASSWORD", cluster.env()["DAGSTER_PG_PASSWORD"])  # the instance's storage
        with dg.DagsterInstance.from_config(str(cluster.home)) as instance:
            hosts = set()
            for job in ("parts_prices_celery_job", "parts_models_celery_job"):
                runs = instance.get_runs(dg.RunsFilter(job_name=job))
                assert len(runs) == (len(SOURCES) if "prices" in job else len(outcome["models"]))
                for run in runs:
                    hosts |= {r.dagster_event.pid for r in instance.all_logs(run.run_id)
                              if r.dagster_event and r.dagster_event.event_type_value == "STEP_START"}
    assert outcome["sources"] == dict.fromkeys(SOURCES, True)
    assert sorted(outcome["models"]) == sorted(models) and all(outcome["models"].values())
    assert outcome["offers"] and outcome["publish"]
    assert len(hosts) == 2  # every partition step ran in one of the two (single-process) workers, both used
    # the placement and weight-bytes caches are the one-process run's memos, which the model steps do not keep
    assert_same_results(local / "data", tmp_path / "cluster" / "data",
                      skip=("placement_cache", "weight_bytes_cache", "serving_cache", "step_inputs"))
