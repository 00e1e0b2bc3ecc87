"""A step's CPU-bound work on the machine's cores : jobs run by processes forked from the step.

The steps of ``vramlab run`` execute in one process (Dagster's in-process executor), and the pure-Python work of the
largest ones (the cheapest setups of every model, the price-independent part of every model file) used one core of
two. :func:`in_workers` runs a module-level function over jobs in worker processes forked from the step, so the
workers inherit what the step has already built (the parsed architectures, the offer groups) instead of receiving it
pickled; only each job's arguments and result cross. The step keeps every DuckDB read and write (the file has one
writer): it prepares each job's inputs as the generator of jobs is consumed and gets the results back in job order.
"""

from __future__ import annotations

import ctypes
import gc
import signal
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing import current_process, get_context
from typing import Any

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Ask the kernel to end this process when its parent ends (Linux ``PR_SET_PDEATHSIG``): a worker process
    never outlives the step or command that started it, however that ended (SIGKILL, ``os._exit`` on SIGTERM).
    The signal is SIGKILL: a forked worker inherits its parent's SIGTERM handler (``vramlab run``'s only sets a
    flag), so a SIGTERM would be caught and ignored, and the worker, whose parent is gone, has nothing to finish."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the pool's own shutdown still ends its workers on a normal exit


#: what the jobs share, set before the workers fork (read by :func:`_run` in each worker)
_SHARED: Any = None


def _run(fn: Callable[..., Any], *job: Any) -> Any:
    return fn(_SHARED, *job)


def in_workers(fn: Callable[..., Any], jobs: Iterable[tuple[Any, ...]], shared: Any, workers: int) -> Iterator[Any]:
    """``fn(shared, *job)`` of every job, in the jobs' order. With ``workers`` > 1 by that many processes forked
    from this one (``fn`` must be a module-level function, each job and result picklable); the jobs are consumed
    lazily, at most twice ``workers`` ahead of the result last handed out, so the inputs they hold stay few. With one
    worker, or in a daemonic process (a Celery prefork worker, which may not start children), in this process."""
    global _SHARED
    if workers <= 1 or current_process().daemon:
        for job in jobs:
            yield fn(shared, *job)
        return
    _SHARED = shared
    gc.freeze()  # what the workers inherit is never scanned by their collector: its pages stay shared, not copied
    try:
        with ProcessPoolExecutor(workers, mp_context=get_context("fork"), initializer=die_with_parent) as pool:
            pending: deque[Future[Any]] = deque()
            for job in jobs:
                pending.append(pool.submit(_run, fn, *job))
                while len(pending) > 2 * workers:  # (a slow job first must not leave a worker idle)
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
    finally:
        _SHARED = None
        gc.unfreeze()
