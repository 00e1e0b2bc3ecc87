"""``pipeline.compute.workers.in_workers``: jobs run by forked worker processes, results in the jobs' order, jobs
consumed lazily, workers replaced by fresh forks after their share of jobs (#28)."""

from __future__ import annotations

import os

from pipeline.compute.workers import in_workers


def _job(shared: dict, x: int) -> tuple[int, int]:
    return os.getpid(), shared["base"] + x * x


def test_results_come_back_in_order_from_fresh_forks_after_their_share_of_jobs() -> None:
    read: list[int] = []

    def jobs():  # consumed lazily: never more than twice the workers ahead of the results handed out
        for x in range(11):
            read.append(x)
            yield (x,)

    results = []
    for pid, value in in_workers(_job, jobs(), {"base": 100}, workers=2, per_worker=2):
        assert len(read) - len(results) <= 2 * 2 + 1
        results.append((pid, value))
    assert [v for _, v in results] == [100 + x * x for x in range(11)]
    pids = {pid for pid, _ in results}
    assert os.getpid() not in pids
    assert len(pids) >= 3  # 11 jobs, 4 per pool of 2 workers: three pools, each with processes of its own


def test_one_worker_runs_in_this_process() -> None:
    assert [v for _, v in in_workers(_job, [(2,), (3,)], {"base": 0}, workers=1)] == [4, 9]
    assert {p for p, _ in in_workers(_job, [(2,), (3,)], {"base": 0}, workers=1)} == {os.getpid()}
