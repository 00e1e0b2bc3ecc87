"""Whose process a run is, and what to do when that process is gone.

A run started in a process of ours (``vramlab run``, ``vramlab parts run`` and its partition processes) carries
tags naming that process: host, pid and the process's start time (so a pid the kernel has since given to another
process is not mistaken for the run's). No daemon monitors such runs: a process killed with SIGKILL, the OOM
killer or a power loss leaves its run STARTED and holding its ``duckdb`` pool slot, and every later run would wait
for that slot for ever. :func:`release_dead_runs` marks such runs failed and gives their slots back; every command
that starts runs calls it first. Runs launched from the UI or the schedule run under the daemon, whose run
monitoring (dagster.yaml ``run_monitoring``) does the same for them.
"""

from __future__ import annotations

import os
import socket
from typing import Any

#: tag keys of a run started by one of our processes
OWNER = "vramlab/cli"
OWNER_PID = "vramlab/cli-pid"
OWNER_HOST = "vramlab/cli-host"
OWNER_START = "vramlab/cli-start"


def process_start(pid: int) -> str:
    """The process's start time in clock ticks since boot (``/proc/PID/stat`` field 22); "" where unknown."""
    try:
        stat = open(f"/proc/{pid}/stat").read()  # noqa: SIM115 - one read
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


def owner_tags(kind: str) -> dict[str, str]:
    """Tags of a run started by this process (``kind``: the command, e.g. ``run`` or ``parts``)."""
    pid = os.getpid()
    return {OWNER: kind, OWNER_PID: str(pid), OWNER_HOST: socket.gethostname(), OWNER_START: process_start(pid)}


def owner_alive(tags: dict[str, str]) -> bool:
    """Whether the process a run's tags name is still running (a run of another host counts as alive)."""
    if tags.get(OWNER_HOST) != socket.gethostname():
        return True
    pid = int(tags.get(OWNER_PID, "0") or 0)
    if pid <= 0:
        return True  # not ours to judge
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    started = tags.get(OWNER_START)
    return not started or process_start(pid) in ("", started)


def release_dead_runs(instance: Any, say: Any = None) -> list[str]:  # noqa: ANN401 - DagsterInstance, a callable
    """Mark failed every unfinished run whose owning process is gone, and free its pool slots; returns their ids.
    ``say`` (optional) is told about each in one line."""
    import dagster as dg

    active = [dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]
    released = []
    for run in instance.get_runs(dg.RunsFilter(statuses=active)):
        if OWNER_PID not in run.tags or owner_alive(run.tags):
            continue
        pid = run.tags[OWNER_PID]
        instance.report_run_failed(run, f"the process of this run (pid {pid}, `vramlab {run.tags.get(OWNER, '?')}`) "
                                        "is gone: run marked failed and its pool slots released")
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        released.append(run.run_id)
        if say is not None:
            say(f"released run {run.run_id[:8]} of a process that died (pid {pid}, vramlab {run.tags.get(OWNER)})")
    return released
