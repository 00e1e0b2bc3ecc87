"""Concurrency faults: guarantees that hold however a run is started (UI, schedule, CLI), and what
a killed run leaves behind. Real Dagster instances on disk, real processes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest
from harness import ROOT

from pipeline.definitions import defs
from pipeline.ops.liveness import owner_tags, release_dead_runs
from pipeline.ops.run import ensure_instance_config


def test_schedule_skips_while_a_ui_run_is_active() -> None:
    """C01 a run launched from the UI carries no refresh tag. Before the fix the schedule only looked for tagged
    runs and would start an overlapping refresh; now any active run makes it skip, with the reason."""
    schedule = defs.resolve_schedule_def("hourly_refresh")
    with dg.instance_for_test() as instance:
        instance.add_run(dg.DagsterRun(job_name="__ASSET_JOB", run_id="ui-run", tags={},
                                       status=dg.DagsterRunStatus.STARTED))
        result = schedule.evaluate_tick(dg.build_schedule_context(instance=instance))
        assert not result.run_requests and "still active" in result.skip_message


def test_dagster_home_without_config_keeps_the_pool_limit(tmp_path: Path) -> None:
    """C02 ``DAGSTER_HOME`` without ``dagster.yaml``: before, the duckdb pool limit was silently absent (two
    runs kept apart only by ~100 s of DuckDB connect retries). ``vramlab run`` / ``rebuild`` now install the
    bundled config (and say so), and the instance then enforces one duckdb slot."""
    from rich.console import Console

    home = tmp_path / "home"
    home.mkdir()
    console = Console(record=True, width=200)
    ensure_instance_config(home, console)
    assert "was missing" in console.export_text()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert instance.get_concurrency_config().pool_config.default_pool_limit == 1
    # a config without a pool limit is the operator's: warned about, not rewritten
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    console = Console(record=True, width=200)
    ensure_instance_config(home, console)
    assert "sets no concurrency.pools.default_limit" in console.export_text()
    assert (home / "dagster.yaml").read_text() == "telemetry:\n  enabled: false\n"


KILLED_RUN = textwrap.dedent("""
    import os, signal, sys, dagster as dg
    from pipeline.ops.liveness import owner_tags

    @dg.asset(pool="duckdb")
    def holds_the_slot():
        os.kill(os.getpid(), signal.SIGKILL)  # dies while holding the duckdb pool slot

    dg.materialize([holds_the_slot], instance=dg.DagsterInstance.get(), tags=owner_tags(sys.argv[1]))
""")


@pytest.mark.parametrize("kind", ["run", "parts"])
def test_killed_run_gives_its_pool_slot_back(tmp_path: Path, kind: str) -> None:
    """C04 (the helper, case by case) a process SIGKILLed while its run holds the duckdb pool slot, for each
    command that starts runs (``vramlab run``; ``vramlab parts run`` and its partition processes, whose killed
    runs nothing released before): ``release_dead_runs`` (what both call before starting, see the whole-command
    test below) marks it failed and frees the slot; a run of a live process is never touched, nor one whose pid
    the kernel has given to another process since (told apart by the process's start time)."""
    from pipeline.ops.liveness import OWNER_START

    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(ROOT / "dagster.yaml", home / "dagster.yaml")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DAGSTER_HOME": str(home)}
    proc = subprocess.run([sys.executable, "-c", KILLED_RUN, kind], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    with dg.DagsterInstance.from_config(str(home)) as instance:
        info = instance.event_log_storage.get_concurrency_info("duckdb")
        assert info.active_slot_count == 1  # held by a process that no longer exists
        dead = instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
        assert len(dead) == 1
        released = release_dead_runs(instance)
        assert released == [dead[0].run_id]
        assert instance.event_log_storage.get_concurrency_info("duckdb").active_slot_count == 0
        assert instance.get_run_by_id(dead[0].run_id).status == dg.DagsterRunStatus.FAILURE
        # a live run of this very process is never touched
        instance.add_run(dg.DagsterRun(job_name="x", run_id="alive", tags=owner_tags(kind),
                                       status=dg.DagsterRunStatus.STARTED))
        assert release_dead_runs(instance) == []
        # this pid, but a process started at another time: the pid was reused, the run's process is gone
        instance.add_run(dg.DagsterRun(job_name="x", run_id="reused", tags=owner_tags(kind) | {OWNER_START: "1"},
                                       status=dg.DagsterRunStatus.STARTED))
        assert release_dead_runs(instance) == ["reused"]


VRAMLAB = Path(sys.executable).parent / "vramlab"

#: steps that hold the duckdb slot for seconds (core__gpus holds it well under one)
LONG_DUCKDB_STEPS = {"out__sizing", "core__price_observations", "out__cheapest_setups", "out__exports"}


class Console:
    """A ``vramlab run`` (or another command) subprocess whose output lines are collected as they come."""

    def __init__(self, env: dict[str, str], data: Path, command: tuple[str, ...] = ("run", "--quiet")) -> None:
        self.lines: list[str] = []
        self.proc = subprocess.Popen([str(VRAMLAB), *command, "--data-dir", str(data)], cwd=ROOT, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def text(self) -> str:
        return "\n".join(self.lines)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=60)


def wait_for(what: str, condition: Callable[[], object], timeout: float = 600) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def slot_holder(home: Path) -> tuple[str, str] | None:
    """(run id, step key) holding the duckdb pool slot, if any."""
    with dg.DagsterInstance.from_config(str(home)) as instance:
        claimed = instance.event_log_storage.get_concurrency_info("duckdb").claimed_slots
    return (claimed[0].run_id, claimed[0].step_key) if claimed else None


def test_two_vramlab_runs_queue_and_a_killed_one_frees_its_slot(tmp_path: Path) -> None:
    """C03 + C04 through the real command: two ``vramlab run`` on one data directory and one Dagster instance.
    The second waits for the first, saying so, and starts nothing while the first is alive (their writes never
    interleave). The first is then SIGKILLed while a step holds the duckdb pool slot: its run stays STARTED and
    the slot claimed (no daemon monitors CLI runs). The waiting run gets the data directory at once (the kernel
    drops a dead process's lock), marks the dead run failed, frees its slot and runs: it claims the slot itself.
    Before the fix ``vramlab run`` took no lock (two CLI runs were kept apart by ~100 s of DuckDB connect
    back-off, or not at all with separate instances) and a killed run's slot stayed claimed, so the next run
    refused (an active refresh run) or, with ``--force``, waited for the slot for ever."""
    data, home = tmp_path / "data", tmp_path / "home"
    home.mkdir()
    shutil.copy(ROOT / "dagster.yaml", home / "dagster.yaml")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DAGSTER_HOME": str(home), "VRAMLAB_DATA_DIR": str(data),
           "COLUMNS": "250"}
    env.pop("VRAMLAB_DB", None)
    first = Console(env, data)
    second = None
    try:
        wait_for("the first run to start", lambda: "vramlab: job" in first.text, 300)
        second = Console(env, data)
        wait_for("the second run to queue (or end)",
                 lambda: "another vramlab run" in second.text or second.proc.poll() is not None, 300)
        assert "another vramlab run" in second.text, f"exit {second.proc.poll()}: {second.text[-2000:]}"
        assert f"pid {first.proc.pid}" in second.text and "waiting" in second.text, second.text
        first_run, step = wait_for("the first run to hold the duckdb slot in a long step",
                                   lambda: (h := slot_holder(home)) and h[1] in LONG_DUCKDB_STEPS and h, 600)
        assert "vramlab: job" not in second.text, "the second run started while the first was running"
        assert second.proc.poll() is None
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait(timeout=60)
        killed_at = time.time()
        with dg.DagsterInstance.from_config(str(home)) as instance:
            assert instance.get_run_by_id(first_run).status == dg.DagsterRunStatus.STARTED  # left behind
        wait_for("the second run to start", lambda: "vramlab: job" in second.text, 120)
        assert f"released run {first_run[:8]}" in second.text and f"(pid {first.proc.pid})" in second.text
        second_run = wait_for("the second run to claim the duckdb slot",
                              lambda: (h := slot_holder(home)) and h[0] != first_run and h[0], 300)
        with dg.DagsterInstance.from_config(str(home)) as instance:
            dead = instance.get_run_by_id(first_run)
            assert dead.status == dg.DagsterRunStatus.FAILURE
            starts = instance.all_logs(second_run, of_type=dg.DagsterEventType.STEP_START)
        assert starts and min(r.timestamp for r in starts) >= killed_at  # no write of the second before
        assert step in LONG_DUCKDB_STEPS
    finally:
        first.kill()
        if second is not None:
            second.kill()


def test_vramlab_run_refuses_while_the_schedule_runs(tmp_path: Path) -> None:
    """C05 ``vramlab run`` while the schedule's refresh (launched by the daemon, not a CLI process) is active in
    the same instance: refused at once with a message naming the run and exit 2, nothing fetched or written; the
    scheduled run is not touched (its process is not ours to judge)."""
    from pipeline.schedules import REFRESH_TAG

    data, home = tmp_path / "data", tmp_path / "home"
    home.mkdir()
    shutil.copy(ROOT / "dagster.yaml", home / "dagster.yaml")
    with dg.DagsterInstance.from_config(str(home)) as instance:
        instance.add_run(dg.DagsterRun(job_name="hourly_refresh_job", run_id="scheduled-run", tags=REFRESH_TAG,
                                       status=dg.DagsterRunStatus.STARTED))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DAGSTER_HOME": str(home), "COLUMNS": "250"}
    env.pop("VRAMLAB_DB", None)
    proc = subprocess.run([str(VRAMLAB), "run", "--quiet", "--data-dir", str(data)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "refresh run scheduled-run is still started" in out and "not starting another" in out
    assert not (data / "raw").exists() and not (data / "vramlab.duckdb").exists()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert instance.get_run_by_id("scheduled-run").status == dg.DagsterRunStatus.STARTED


def test_rebuild_from_another_instance_waits_for_a_running_run(tmp_path: Path) -> None:
    """C06 ``vramlab rebuild`` while a ``vramlab run`` works on the same data directory, each with its own
    ``DAGSTER_HOME`` (so no shared duckdb pool): the rebuild waits for the run, saying so, and does not move the
    database aside under it; once the run is gone (SIGKILLed in a DuckDB step here) the rebuild takes over and
    re-creates everything from what had landed (exit 0). Before, rebuild took no lock: it moved the database
    aside under the running run."""
    data = tmp_path / "data"
    homes = [tmp_path / "home-run", tmp_path / "home-rebuild"]
    for home in homes:
        home.mkdir()
        shutil.copy(ROOT / "dagster.yaml", home / "dagster.yaml")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "VRAMLAB_DATA_DIR": str(data), "COLUMNS": "250"}
    env.pop("VRAMLAB_DB", None)
    run = Console(env | {"DAGSTER_HOME": str(homes[0])}, data)
    rebuild = None
    try:
        wait_for("the run to hold the duckdb slot in a long step",
                 lambda: (h := slot_holder(homes[0])) and h[1] in LONG_DUCKDB_STEPS, 600)
        rebuild = Console(env | {"DAGSTER_HOME": str(homes[1])}, data, ("rebuild",))
        wait_for("the rebuild to queue (or end)",
                 lambda: "another vramlab run" in rebuild.text or rebuild.proc.poll() is not None, 300)
        assert f"pid {run.proc.pid}" in rebuild.text and "waiting" in rebuild.text, rebuild.text[-2000:]
        assert not list(data.glob("vramlab.duckdb.aside-*")) and run.proc.poll() is None
        run.proc.send_signal(signal.SIGKILL)
        run.proc.wait(timeout=60)
        assert rebuild.proc.wait(timeout=900) == 0, rebuild.text[-3000:]
        # moved aside once: the file, and beside it its WAL when the kill left one
        asides = sorted(p.name for p in data.glob("vramlab.duckdb.aside-*"))
        assert len(asides) in (1, 2) and all(a.startswith(asides[0]) for a in asides), asides
        assert asides[1:] in ([], [asides[0] + ".wal"]), asides
        assert "rebuilt: fetch_log" in rebuild.text
    finally:
        run.kill()
        if rebuild is not None:
            rebuild.kill()
