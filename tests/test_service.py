"""The hourly service for real: ``vramlab serve`` starts a real ``dagster-daemon`` and webserver on
loopback; with a test-only cron of every minute a real schedule tick fires, the daemon launches the scheduled run
(the multiprocess ``hourly_refresh_job``, offline replay) and it publishes a snapshot. Read back through the
webserver's GraphQL, as the UI does."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from faults.harness import track_few_models

ROOT = Path(__file__).resolve().parent.parent
VRAMLAB = Path(sys.executable).parent / "vramlab"

QUERY = """{
  scheduleOrError(scheduleSelector: {repositoryLocationName: "vramlab", repositoryName: "__repository__",
                                     scheduleName: "hourly_refresh"}) {
    ... on Schedule { cronSchedule scheduleState { status ticks(limit: 10) { status runIds } } }
    ... on PythonError { message }
  }
  runsOrError(filter: {tags: [{key: "dagster/schedule_name", value: "hourly_refresh"}]}) {
    ... on Runs { results { runId status jobName } }
  }
}"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_runs_the_schedule_and_publishes(tmp_path: Path) -> None:
    port = free_port()
    data = tmp_path / "data"
    track_few_models(data)  # the tick's run publishes 5 models, not the packaged watchlist's every one
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DAGSTER_HOME": str(tmp_path / "home"),
           "VRAMLAB_DATA_DIR": str(data)}
    env.pop("VRAMLAB_DB", None)
    proc = subprocess.Popen([str(VRAMLAB), "serve", "--port", str(port), "--cron", "* * * * *"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/graphql"
    state = runs = None
    try:
        deadline = time.time() + 900  # a tick within a minute, then one whole multiprocess run on 2 cores
        while time.time() < deadline:
            assert proc.poll() is None, proc.stdout.read().decode()[-3000:] if proc.stdout else ""
            try:
                answer = httpx.post(url, json={"query": QUERY}, timeout=30).json()["data"]
                state = answer["scheduleOrError"]
                runs = answer["runsOrError"]["results"]
            except (httpx.HTTPError, KeyError, TypeError, ValueError):
                time.sleep(2)
                continue
            if any(r["status"] == "SUCCESS" for r in runs) and (data / "exports" / "latest").exists():
                break
            assert not any(r["status"] == "FAILURE" for r in runs), runs
            time.sleep(5)
    finally:
        with contextlib.suppress(ProcessLookupError):  # already gone: the assertion above says why
            os.killpg(proc.pid, signal.SIGTERM)  # vramlab serve stops its daemon and webserver
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert state and state["scheduleState"]["status"] == "RUNNING", state  # on by default under vramlab serve
    assert state["cronSchedule"] == "* * * * *"
    ticks = state["scheduleState"]["ticks"]
    assert any(t["status"] == "SUCCESS" and t["runIds"] for t in ticks), ticks  # a real tick requested the run
    done = [r for r in runs if r["status"] == "SUCCESS"]
    assert done and done[0]["jobName"] == "hourly_refresh_job", runs
    manifest = json.loads((data / "exports" / "latest" / "manifest.json").read_text())
    assert manifest["snapshot_id"] and manifest["files"]
