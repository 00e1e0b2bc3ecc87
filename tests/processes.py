"""Processes a test run leaves behind: this process's descendants, and any process whose command line or
environment names the run's temporary folder (a child re-parented to init after its parent died still holds a
data dir there; a forked worker keeps its parent's command line, its environment names the data dir).
Zombies are not counted: they hold nothing; nor are the helpers multiprocessing keeps for this process itself."""

from __future__ import annotations

import os
import time
from pathlib import Path

#: processes Python's multiprocessing starts for the process that uses it (Dagster's multiprocess executor uses the
#: forkserver): they serve it for its lifetime and exit when it exits
OWN_HELPERS = ("multiprocessing.forkserver", "multiprocessing.resource_tracker")


def _stat(pid: str) -> tuple[int, str] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[1]), fields[0]  # parent pid, state


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _environ(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def left_behind(root: int, mentioning: str | None) -> list[str]:
    """Live descendants of ``root`` and live processes whose command line contains ``mentioning``."""
    parents, states = {}, {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        info = _stat(pid)
        if info:
            parents[int(pid)], states[int(pid)] = info
    found = []
    for pid, state in states.items():
        if pid == root or state == "Z":
            continue
        ancestor, seen = parents.get(pid), 0
        while ancestor not in (None, 0, 1, root) and seen < 64:
            ancestor, seen = parents.get(ancestor), seen + 1
        command = _cmdline(str(pid))
        if parents.get(pid) == root and any(helper in command for helper in OWN_HELPERS):
            continue  # this process's own multiprocessing helpers: they end when it does
        if ancestor == root or (mentioning and (mentioning in command or mentioning in _environ(str(pid)))):
            found.append(f"{pid}: {command[:160]}")
    return found


def wait_until_none_left(root: int, mentioning: str | None, seconds: float = 60.0) -> list[str]:
    """What is still left after waiting up to ``seconds`` for processes on their way out to end."""
    deadline = time.monotonic() + seconds
    left = left_behind(root, mentioning)
    while left and time.monotonic() < deadline:
        time.sleep(0.5)
        left = left_behind(root, mentioning)
    return left
