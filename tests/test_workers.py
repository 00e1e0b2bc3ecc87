"""``pipeline.compute.workers.in_workers``: jobs run by processes forked from the step, results in the jobs' order;
in this process with one worker or when the process is daemonic (a Celery prefork worker may not start children:
the Celery refresh failed its exports step that way)."""

from __future__ import annotations

import multiprocessing
import os

from pipeline.compute.workers import in_workers


def _job(shared: dict, x: int) -> tuple[int, int]:
    return os.getpid(), shared["base"] + x * x


def test_results_come_back_in_order_from_other_processes() -> None:
    results = list(in_workers(_job, [(x,) for x in range(9)], {"base": 100}, workers=2))
    assert [v for _, v in results] == [100 + x * x for x in range(9)]
    assert os.getpid() not in {pid for pid, _ in results}


def _in_daemon(out: multiprocessing.Queue) -> None:
    out.put((os.getpid(), list(in_workers(_job, [(2,), (3,)], {"base": 0}, workers=2))))


def test_a_daemonic_process_runs_the_jobs_itself() -> None:
    out: multiprocessing.Queue = multiprocessing.get_context("fork").Queue()
    daemon = multiprocessing.get_context("fork").Process(target=_in_daemon, args=(out,), daemon=True)
    daemon.start()
    pid, results = out.get(timeout=60)
    daemon.join(60)
    assert daemon.exitcode == 0
    assert results == [(pid, 4), (pid, 9)]
