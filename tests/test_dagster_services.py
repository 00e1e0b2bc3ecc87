"""Dagster as users run it: the real webserver on a loopback port, and two runs touching DuckDB at once."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dagster_env(tmp: Path) -> dict[str, str]:
    home = tmp / "dagster_home"
    home.mkdir(exist_ok=True)
    shutil.copy(ROOT / "dagster.yaml", home / "dagster.yaml")
    return {**os.environ, "DAGSTER_HOME": str(home), "VRAMLAB_DATA_DIR": str(tmp / "data")}


def test_webserver_serves_the_graph_and_schedule(tmp_path: Path) -> None:
    port = free_port()
    webserver = Path(sys.executable).parent / "dagster-webserver"
    proc = subprocess.Popen([str(webserver), "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
                            cwd=ROOT, env=dagster_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 180
        while time.time() < deadline:
            try:
                if httpx.get(f"{url}/server_info", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None, proc.stdout.read().decode()[-2000:]
            time.sleep(1)
        query = """{
          assetNodes { assetKey { path } }
          schedulesOrError(repositorySelector: {repositoryLocationName: "vramlab", repositoryName: "__repository__"}) {
            ... on Schedules { results { name cronSchedule executionTimezone } }
            ... on PythonError { message }
          }
        }"""
        data = None
        while time.time() < deadline:  # the code location may still be loading
            data = httpx.post(f"{url}/graphql", json={"query": query}, timeout=30).json()["data"]
            if data["assetNodes"]:
                break
            time.sleep(1)
        keys = {"/".join(n["assetKey"]["path"]) for n in data["assetNodes"]}
        assert {"raw_prices__azure", "core__offers_current", "core__models"} <= keys
        schedules = data["schedulesOrError"]["results"]
        assert [(s["name"], s["cronSchedule"], s["executionTimezone"]) for s in schedules] == \
            [("hourly_refresh", "0 * * * *", "UTC")]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert proc.returncode is not None


RUN_CORE = textwrap.dedent("""
    import json, sys
    import dagster as dg
    from pipeline.assets.core import CORE_ASSETS
    from pipeline.resources import default_resources
    instance = dg.DagsterInstance.get()
    result = dg.materialize(CORE_ASSETS, instance=instance, resources=default_resources())
    held = []  # every DuckDB writer's connection, as logged by pipeline.resources.store under the writer lock
    for record in instance.all_logs(result.run_id):
        message = record.user_message or ""
        if message.startswith("DuckDB writer lock taken"):
            held.append([record.step_key, record.timestamp, None])
        elif message.startswith("DuckDB writer lock released"):
            opened = [h for h in held if h[0] == record.step_key and h[2] is None]
            opened[-1][2] = record.timestamp
    print(json.dumps({"success": result.success, "held": held}))
""")


def test_two_runs_touching_duckdb_are_serialised_by_the_pool(tmp_path: Path) -> None:
    env = dagster_env(tmp_path)
    # land the raw data once (no DuckDB involved), then race two runs of the DuckDB assets
    land = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import dagster as dg
        from pipeline.assets.raw import RAW_ASSETS
        from pipeline.resources import default_resources
        # with the instance from DAGSTER_HOME, so its storage exists before the two runs race
        assert dg.materialize(RAW_ASSETS, instance=dg.DagsterInstance.get(), resources=default_resources()).success
    """)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert land.returncode == 0, land.stderr[-2000:]
    procs = [subprocess.Popen([sys.executable, "-c", RUN_CORE], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for proc, (_out, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, err[-2000:]
        assert "Could not set lock" not in err and "IOException" not in err
    runs = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
    assert all(r["success"] for r in runs)
    # the intervals in which each DuckDB asset body held its connection, in both runs: never overlapping. They
    # are taken under the writer lock itself, so this holds whatever the order in which steps claimed the pool
    # (the step-start times the old version compared are logged before the lock is taken)
    intervals = sorted((start, end) for r in runs for _, start, end in r["held"])
    assert len({step for r in runs for step, _, _ in r["held"]}) == 5  # every DuckDB asset of the core graph
    assert len(intervals) >= 10 and all(end is not None for _, end in intervals)
    for (_, end), (start, _) in zip(intervals, intervals[1:], strict=False):
        assert start >= end, "two DuckDB writers held their connections at the same time"


@pytest.fixture(autouse=True)
def _allow_loopback() -> None:
    """These tests talk to servers on 127.0.0.1 only (the conftest guard allows loopback)."""
