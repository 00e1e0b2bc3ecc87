"""Concurrency faults (issue #16): guarantees that hold however a run is started (UI, schedule, CLI), and what
a killed run leaves behind. Real Dagster instances on disk, real processes."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import dagster as dg
from harness import ROOT

from pipeline.cli.run import cli_run_tags, ensure_instance_config, release_dead_cli_runs
from pipeline.definitions import defs


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


HOLD_LOCK = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from rich.console import Console
    from pipeline.cli.run import run_lock
    console = Console(stderr=True)
    with run_lock(Path(sys.argv[1]), console):
        start = time.time()
        time.sleep(float(sys.argv[2]))
        print(json.dumps([start, time.time()]))
""")


def test_two_cli_runs_queue_on_the_data_dir(tmp_path: Path) -> None:
    """C03 two ``vramlab run`` on one data directory at once: the second waits for the first (it says so), their
    write windows never overlap; a killed holder releases the lock at once (the kernel drops it)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(tmp_path), "2"], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    second = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(tmp_path), "0.1"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    (out1, _), (out2, err2) = first.communicate(timeout=60), second.communicate(timeout=60)
    (_s1, e1), (s2, _e2) = json.loads(out1), json.loads(out2)
    assert s2 >= e1, "the second run entered while the first still held the data directory"
    assert "another vramlab run" in err2 and "waiting" in err2
    # a SIGKILLed holder does not block the next run
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(tmp_path), "60"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)
    started = time.monotonic()
    after = subprocess.run([sys.executable, "-c", HOLD_LOCK, str(tmp_path), "0"], env=env, capture_output=True,
                           text=True, timeout=60)
    assert after.returncode == 0 and time.monotonic() - started < 30


KILLED_RUN = textwrap.dedent("""
    import os, signal, dagster as dg
    from pipeline.cli.run import cli_run_tags

    @dg.asset(pool="duckdb")
    def holds_the_slot():
        os.kill(os.getpid(), signal.SIGKILL)  # dies while holding the duckdb pool slot

    dg.materialize([holds_the_slot], instance=dg.DagsterInstance.get(), tags=cli_run_tags())
""")


def test_killed_cli_run_gives_its_pool_slot_back(tmp_path: Path) -> None:
    """C04 a ``vramlab run`` SIGKILLed while holding the duckdb pool slot: no daemon monitors CLI runs, so the
    run stayed STARTED and its slot claimed for good (every later run waited). The next ``vramlab run`` now
    marks it failed and frees the slot before starting."""
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(ROOT / "dagster.yaml", home / "dagster.yaml")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DAGSTER_HOME": str(home)}
    proc = subprocess.run([sys.executable, "-c", KILLED_RUN], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    with dg.DagsterInstance.from_config(str(home)) as instance:
        info = instance.event_log_storage.get_concurrency_info("duckdb")
        assert info.active_slot_count == 1  # held by a process that no longer exists
        dead = instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
        assert len(dead) == 1
        released = release_dead_cli_runs(instance)
        assert released == [dead[0].run_id]
        assert instance.event_log_storage.get_concurrency_info("duckdb").active_slot_count == 0
        assert instance.get_run_by_id(dead[0].run_id).status == dg.DagsterRunStatus.FAILURE
        # a live run of this very process is never touched
        instance.add_run(dg.DagsterRun(job_name="x", run_id="alive", tags=cli_run_tags(),
                                       status=dg.DagsterRunStatus.STARTED))
        assert release_dead_cli_runs(instance) == []
