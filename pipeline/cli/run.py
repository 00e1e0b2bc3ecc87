"""The main job: materialize the whole asset graph once (offline replay unless ``VRAMLAB_LIVE=1``), then print
what happened. With ``DAGSTER_HOME`` set, the run is recorded in that instance (and its pool limits apply; a
``DAGSTER_HOME`` without ``dagster.yaml`` gets the bundled one, so the DuckDB pool limit is never silently
absent); otherwise an ephemeral instance is used. Two ``vramlab run`` on one data directory never overlap: the
second waits for the first (a lock file in the data directory, released by the kernel if the first is killed)."""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.table import Table

from pipeline.settings import settings


def resolve_data_dir(override: str | None = None) -> Path:
    """``override``, else ``$VRAMLAB_DATA_DIR``, else ``data/`` at the repository root."""
    return Path(override) if override else settings().data_dir


BUNDLED_INSTANCE_CONFIG = Path(__file__).resolve().parents[2] / "dagster.yaml"


def ensure_instance_config(home: Path, console: Console) -> None:
    """A ``DAGSTER_HOME`` without ``dagster.yaml`` would run without the DuckDB pool limit: install ours, loudly.
    One with a ``dagster.yaml`` that sets no pool limit gets a warning (the operator's file is not rewritten)."""
    config = home / "dagster.yaml"
    if not config.exists():
        home.mkdir(parents=True, exist_ok=True)
        shutil.copy(BUNDLED_INSTANCE_CONFIG, config)
        console.print(f"[yellow]{config} was missing: installed vramlab's (DuckDB pool limit 1, run monitoring)"
                      "[/yellow]")
        return
    import yaml

    try:
        data = yaml.safe_load(config.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        console.print(f"[red]{config} is not readable YAML ({exc})[/red]")
        return
    pools = ((data.get("concurrency") or {}).get("pools") or {})
    if pools.get("default_limit") is None:
        console.print(f"[yellow]warning: {config} sets no concurrency.pools.default_limit: runs started elsewhere "
                      "(UI, schedule) are not kept apart from this one by the duckdb pool. Copy vramlab's "
                      "dagster.yaml there (docs/operating.md).[/yellow]")


CLI_TAG = "vramlab/cli"


def cli_run_tags() -> dict[str, str]:
    """Tags of a run started by this process: who to ask whether it is still alive."""
    return {CLI_TAG: "run", "vramlab/cli-pid": str(os.getpid()), "vramlab/cli-host": socket.gethostname()}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def release_dead_cli_runs(instance, console: Console | None = None) -> list[str]:  # type: ignore[no-untyped-def]
    """Runs started by a ``vramlab run`` process that died (SIGKILL, OOM, power loss) stay STARTED forever and
    keep their ``duckdb`` pool slot: no daemon monitors a CLI run, so every later run would wait for a slot that
    is never given back. Mark them failed and free their slots (only for processes of this host that are gone)."""
    import dagster as dg

    active = [dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]
    released = []
    for run in instance.get_runs(dg.RunsFilter(statuses=active, tags={CLI_TAG: "run"})):
        pid = int(run.tags.get("vramlab/cli-pid", "0") or 0)
        if run.tags.get("vramlab/cli-host") != socket.gethostname() or pid <= 0 or _alive(pid):
            continue
        instance.report_run_failed(run, f"the vramlab run process (pid {pid}) is gone: run marked failed and its "
                                        "pool slots released by the next vramlab run")
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        released.append(run.run_id)
        if console is not None:
            console.print(f"[yellow]released run {run.run_id[:8]} of a vramlab run that died (pid {pid})[/yellow]")
    return released


@contextmanager
def run_lock(data_dir: Path, console: Console) -> Iterator[None]:
    """One ``vramlab run`` per data directory at a time: the second queues behind the first, with a message."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / ".vramlab-run.lock"
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "?"
            console.print(f"[yellow]another vramlab run (pid {holder}) is using {data_dir}: waiting for it to "
                          "finish[/yellow]")
            fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def run_main_job(data_dir: str | None = None) -> int:
    import dagster as dg

    from pipeline.definitions import ALL_ASSETS
    from pipeline.resources import default_resources

    if data_dir:
        os.environ["VRAMLAB_DATA_DIR"] = data_dir
    console = Console()
    resources = default_resources()
    settings = resources["vramlab"].settings  # type: ignore[attr-defined]
    console.print(f"vramlab: materializing {len(ALL_ASSETS)} assets "
                  f"({'live sources' if not settings.replay else 'offline replay'}) into {settings.data_dir}")
    damaged = _damaged_database(settings.db_path)
    if damaged:
        console.print(f"[red]vramlab: error: {damaged}[/red]")
        return 3
    if os.environ.get("DAGSTER_HOME"):
        ensure_instance_config(Path(os.environ["DAGSTER_HOME"]), console)
    instance = dg.DagsterInstance.get() if os.environ.get("DAGSTER_HOME") else dg.DagsterInstance.ephemeral()
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    with run_lock(settings.data_dir, console):
        release_dead_cli_runs(instance, console)
        result = dg.materialize(ALL_ASSETS, instance=instance, resources=resources, raise_on_error=False,
                                run_config=quiet, tags=cli_run_tags())
    table = Table(title="Sources")
    for col in ("source", "outcome", "offers", "message"):
        table.add_column(col)
    for key, md in sorted(_raw_price_metadata(result).items()):
        table.add_row(key.removeprefix("raw_prices__"), str(md["outcome"].value), str(md["offers"].value),
                      str(md["message"].value)[:60])
    console.print(table)
    failed_checks = [f"{e.asset_key.to_user_string()}:{e.check_name}" for e in result.get_asset_check_evaluations()
                     if not e.passed]
    for check in failed_checks:
        console.print(f"[yellow]check failed[/yellow] {check}")
    console.print(("[green]run succeeded[/green]" if result.success else "[red]run failed[/red]")
                  + f"; DuckDB: {settings.db_path}")
    damage = next((m for m in _failure_messages(result) if "is damaged" in m), None)
    if damage:  # found mid-run (a damaged block read by a step): the same one clear message and exit code
        console.print(f"[red]vramlab: error: {damage}[/red]")
        return 3
    return 0 if result.success else 1


def _failure_messages(result) -> list[str]:  # type: ignore[no-untyped-def]
    out = []
    for event in result.all_node_events:
        if event.is_step_failure and event.step_failure_data.user_failure_data is not None:
            out.append(event.step_failure_data.user_failure_data.description or "")
        elif event.is_step_failure and event.step_failure_data.error is not None:
            out.append(event.step_failure_data.error.message)
    return out


def _damaged_database(db_path: Path) -> str | None:
    """One clear message when the DuckDB file is damaged (checked before anything runs, without waiting for a
    lock another run may hold); None when it is fine, absent or busy."""
    from pipeline.storage.db import DatabaseBusy, DatabaseDamaged, connect, open_database

    if not db_path.exists():
        return None
    try:
        open_database(db_path, lock_wait=0).close()
        connect(db_path).close()  # reads the schema version table: catches damage past the header
    except DatabaseDamaged as exc:
        return str(exc)
    except DatabaseBusy:
        return None
    return None


def _raw_price_metadata(result) -> dict:  # type: ignore[no-untyped-def]
    """Metadata of each raw price asset by key (the price sources are one multi-asset step, so by key, not node)."""
    out = {}
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        key = mat.asset_key.to_user_string()
        if key.startswith("raw_prices__"):
            out[key] = mat.metadata
    return out
