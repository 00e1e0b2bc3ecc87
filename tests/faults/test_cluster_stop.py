"""The local Celery cluster starts and stops everything it owns, and never touches another cluster's database.

The faults as found: stopping ``scripts/cluster.py up`` with SIGTERM left the workers and redis-server running;
SIGINT was never answered (``signal.sigwait`` without masking the signals); a second ``up`` with another root
dropped and recreated the first cluster's Dagster database. Real Postgres, redis-server and a dagster-celery
worker, started by the script users run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from harness import ROOT

from pipeline.ops.cluster import LocalCluster, _as_postgres


def processes_mentioning(text: str) -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline and int(pid) != os.getpid():
            found.append(f"{pid}: {cmdline[:200]}")
    return found


def test_each_root_has_its_own_database(tmp_path: Path) -> None:
    first = LocalCluster(root=tmp_path / "a", data_dir=tmp_path / "a" / "data")
    second = LocalCluster(root=tmp_path / "b", data_dir=tmp_path / "b" / "data")
    assert first.db_name != second.db_name and first.db_name.startswith("vramlab_dagster_")
    assert LocalCluster(root=tmp_path / "a", data_dir=tmp_path / "x").db_name == first.db_name  # same root, same one


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_up_stops_everything_it_started_on_a_signal(tmp_path: Path, stop: signal.Signals) -> None:
    root = tmp_path / "cluster"
    proc = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "cluster.py"), "up", "--workers", "1",
                             "--root", str(root)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            lines.append(line)
            if line.startswith("cluster up:"):
                ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert ready.wait(600), "".join(lines)[-3000:]  # Postgres, redis-server and the worker answering pings
        db_name = LocalCluster(root=root, data_dir=root / "data").db_name
        up_line = next(line for line in lines if line.startswith("cluster up:"))
        redis = "127.0.0.1:" + up_line.split("redis://127.0.0.1:", 1)[1].split("/", 1)[0]  # redis-server's title
        assert processes_mentioning(redis), up_line
        assert _as_postgres(f"SELECT 1 FROM pg_database WHERE datname = '{db_name}'").stdout.strip() == "1"
        assert processes_mentioning(str(root)), "the cluster's processes were not found"
        proc.send_signal(stop)
        assert proc.wait(timeout=180) == 0, "".join(lines)[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(timeout=10)
    assert processes_mentioning(str(root)) == []  # no worker left
    assert processes_mentioning(redis) == []  # no redis-server left
    assert _as_postgres(f"SELECT 1 FROM pg_database WHERE datname = '{db_name}'").stdout.strip() == ""
