"""The Celery executor the project's Celery jobs use: dagster-celery's, with a watch on the workers running its steps.

dagster-celery waits for each step's task result without a bound. A worker that dies mid-step without reporting
(SIGKILL of the whole worker, the OOM killer taking the worker process, a host gone) never stores a result, so the
run would wait for ever and keep its ``duckdb`` pool slot. Here each step's result also answers "ready" once the
worker that was running it has gone: the step fails, an engine event with a :class:`StepWorkerLost` error names the
worker, the step's pool slot is given back, the steps that do not depend on it still run, the run fails and the orchestrating process gives its slots
back. A pool child killed while
its worker lives is reported by Celery itself (``WorkerLostError``) and needs no watch.

A worker records in the result backend that it started a task and which worker it is (:data:`WORKER_SETTINGS`,
which the workers' configuration must carry too). The watch asks the workers which tasks they hold
(``inspect().active()`` and ``reserved()``, once per interval for all of a run's steps). A task counts as lost when it
was started and then, on :data:`MISSES_TO_LOSE` consecutive answers, is neither running on any worker nor finished.
A task still queued (not started) is not judged: it waits for a worker as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

#: Celery settings the executor and every worker share: a started task's state names its worker in the backend, and a
#: worker takes a task only when a pool process is free to run it (with prefetching, a task a worker holds but has
#: not started dies with the worker unseen: neither started nor queued any more)
WORKER_SETTINGS = {"task_track_started": True, "worker_disable_prefetch": True}
#: seconds between two questions to the workers
INTERVAL_S = 5.0
#: consecutive answers without a task that was running before it is declared lost
MISSES_TO_LOSE = 2


class StepWorkerLost(RuntimeError):
    """The Celery worker that was running a step is gone and the step left no result."""


def _step_lost(plan_context: Any, step_key: str) -> Callable[[str], None]:  # noqa: ANN401 - PlanOrchestrationContext
    """What to do when ``step_key``'s worker is gone: say why in the run's event log, and give back the pool slot
    the step held (its worker would have; without it the run's other pooled steps wait for that slot for ever)."""
    from dagster._core.events import EngineEventData
    from dagster._utils.error import SerializableErrorInfo

    def lost(message: str) -> None:
        instance, run = plan_context.instance, plan_context.dagster_run
        error = SerializableErrorInfo(message=message, stack=[], cls_name=StepWorkerLost.__name__)
        instance.report_engine_event(message, run, EngineEventData(error=error), step_key=step_key)
        instance.event_log_storage.free_concurrency_slot_for_step(run.run_id, step_key)
    return lost


@dataclass
class WorkerCensus:
    """Which task each worker is running, asked at most once per ``interval`` seconds."""

    app: Any  # celery.Celery
    interval: float = INTERVAL_S
    running: dict[str, str] = field(default_factory=dict)  # task id -> worker name
    generation: int = 0  # counts answers, so a step counts one miss per answer
    _asked: float = float("-inf")

    def refresh(self) -> None:
        now = time.monotonic()
        if now - self._asked < self.interval:
            return
        self._asked = now
        inspect = self.app.control.inspect(timeout=2.0)
        held = [inspect.active() or {}, inspect.reserved() or {}]
        self.running = {task["id"]: worker for answer in held for worker, tasks in answer.items() for task in tasks or []}
        self.generation += 1


@dataclass
class WatchedStep:
    """One step's Celery task result (what dagster-celery's loop polls), ready too when its worker is gone."""

    result: Any  # celery.result.AsyncResult
    census: WorkerCensus
    step_key: str
    on_lost: Callable[[str], None]  # records why, frees the step's pool slot
    seen_on: str = ""
    misses: int = 0
    _counted: int = -1
    lost: str = ""

    def ready(self) -> bool:
        if self.lost or self.result.ready():
            return True
        if not self.seen_on and self.result.state == "STARTED":
            self.seen_on = (self.result.info or {}).get("hostname", "") or "?"
        self.census.refresh()
        if not self.seen_on and self.result.id in self.census.running:
            self.seen_on = self.census.running[self.result.id]
        if not self.seen_on:
            return False  # still queued: waits for a worker
        if self.result.id in self.census.running:
            self.seen_on, self.misses = self.census.running[self.result.id], 0
        elif self._counted != self.census.generation:
            self._counted = self.census.generation
            self.misses += 1
            if self.misses >= MISSES_TO_LOSE and not self.result.ready():  # a result stored meanwhile wins
                self.lost = (f"step {self.step_key}: Celery worker {self.seen_on} was running it and is gone "
                             f"(no longer answering with the task, no result stored)")
        return bool(self.lost)

    def get(self) -> Any:  # noqa: ANN401 - the serialized step events dagster-celery returns
        if self.lost:
            # no events: the loop marks the step failed ("finished without success or failure event"), skips what
            # depends on it and runs the rest (an exception here would leave the loop waiting on the other steps)
            self.on_lost(self.lost)
            self.result.revoke()  # a worker that would get the message again discards it
            return []
        return self.result.get()

    def revoke(self) -> None:
        self.result.revoke()


def _watched_executor_class() -> type:
    from dagster_celery.core_execution_loop import core_celery_execution_loop
    from dagster_celery.executor import CeleryExecutor, _submit_task
    from dagster_celery.make_app import make_app

    class WatchedCeleryExecutor(CeleryExecutor):
        def execute(self, plan_context, execution_plan):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202
            census = WorkerCensus(make_app(self.app_args()))

            def submit(app, plan_context, step, queue, priority, known_state):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202, PLR0913
                return WatchedStep(_submit_task(app, plan_context, step, queue, priority, known_state), census,
                                   step.key, _step_lost(plan_context, step.key))

            return core_celery_execution_loop(plan_context, execution_plan, step_execution_fn=submit)

    return WatchedCeleryExecutor


def celery_executor(broker: str, name: str) -> dg.ExecutorDefinition:
    """The watched Celery executor for ``broker`` (also the result backend), configured under ``name``. Imports
    Celery only when called: the single-host install never pays for it."""
    from dagster._core.execution.retries import RetryMode
    from dagster_celery.executor import CELERY_CONFIG

    executor_class = _watched_executor_class()

    @dg.executor(name="celery", config_schema=CELERY_CONFIG, requirements=dg.multiple_process_executor_requirements())
    def watched_celery_executor(init_context):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202
        config = init_context.executor_config
        return executor_class(broker=config.get("broker"), backend=config.get("backend"),
                              config_source=config.get("config_source"), include=config.get("include"),
                              retries=RetryMode.from_config(config["retries"]))

    return watched_celery_executor.configured({"broker": broker, "backend": broker,
                                               "config_source": WORKER_SETTINGS}, name=name)
