"""Stopping and starting ``vramlab run``, as users do, through the real console script: a
``DAGSTER_HOME`` that cannot be used is one line with exit 2 (before: a traceback, exit 1); SIGTERM while the run
publishes marks the run failed in the instance at once and leaves no half-written ``.tmp-`` snapshot (before:
both stayed until the next run)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
from harness import ROOT
from processes import wait_until_none_left

VRAMLAB = Path(sys.executable).parent / "vramlab"


def env_for(tmp_path: Path, home: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "VRAMLAB_DATA_DIR": str(tmp_path / "data"), "DAGSTER_HOME": str(home)}
    env.pop("VRAMLAB_DB", None)
    return env


def test_unusable_dagster_home_is_one_line_exit_2(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    out = subprocess.run([str(VRAMLAB), "run", "--quiet"], cwd=ROOT, env=env_for(tmp_path, blocker / "home"),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 2, (out.returncode, out.stderr[-2000:])
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "DAGSTER_HOME" in lines[0] and "--ephemeral" in lines[0], out.stderr
    assert "Traceback" not in out.stderr


def test_sigterm_while_publishing_cleans_up_at_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    exports = tmp_path / "data" / "exports"
    proc = subprocess.Popen([str(VRAMLAB), "run", "--quiet"], cwd=ROOT, env=env_for(tmp_path, home),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600
    caught = False
    while time.monotonic() < deadline and proc.poll() is None:
        if exports.is_dir() and any(exports.glob(".tmp-*")):  # a snapshot being written
            proc.send_signal(signal.SIGTERM)
            caught = True
            break
        time.sleep(0.005)
    proc.wait(timeout=120)
    assert caught, "the run finished before its snapshot folder was seen being written"
    assert proc.returncode in (143, -signal.SIGTERM), (proc.returncode, proc.stderr.read()[-2000:])
    # removed by the clean-up process the run starts as it exits (so that no writer thread races it)
    gone = time.monotonic() + 30
    while list(exports.glob(".tmp-*")) and time.monotonic() < gone:
        time.sleep(0.1)
    assert not list(exports.glob(".tmp-*")), "a half-written snapshot was left behind"
    assert not (exports / "latest").exists()  # nothing was published by the stopped run
    with dg.DagsterInstance.from_config(str(home)) as instance:
        runs = instance.get_runs()
    assert len(runs) == 1 and runs[0].status == dg.DagsterRunStatus.FAILURE, [r.status for r in runs]
    # and nothing of the stopped run lives on: its forked workers ended with it (they held the DuckDB file and its
    # writer lock; before, two were still alive hours later)
    assert wait_until_none_left(os.getpid(), str(tmp_path / "data"), seconds=30) == []
