"""``vramlab run``: the whole graph once, as job ``vramlab_refresh``, recorded in a persistent Dagster instance.

The instance is ``$DAGSTER_HOME``, else ``.dagster_home/`` in the project (git-ignored), holding a copy of the
project's ``dagster.yaml`` (the DuckDB pool limit applies); ``dagster-webserver -w workspace.yaml`` with the same
``DAGSTER_HOME`` shows the run, its tags and metadata. The run is tagged ``vramlab/refresh`` like the scheduled
refresh: a CLI run does not start while another refresh is active, and the schedule skips while a CLI run is.
While it runs, a progress bar follows each asset; at the end a summary says what was published and what to do next.
Offline replay unless ``VRAMLAB_LIVE=1``.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from pipeline.data_dir import DataDir
from pipeline.errors import UserError, discard_stdout
from pipeline.ops.liveness import owner_tags, release_dead_runs
from pipeline.settings import IN_CHECKOUT, REPO_ROOT, project_file, settings
from pipeline.sources.landing import HEALTHY

#: the instance configuration installed into a DAGSTER_HOME without one (the DuckDB pool limit)
BUNDLED_INSTANCE_CONFIG = project_file("dagster.yaml")

CLI_TAGS = {"vramlab/trigger": "cli"}
MAIN_GPUS = ("h100", "h200", "b200")


def workspace_arg() -> str:
    """The workspace file as a command line names it: ``workspace.yaml`` from the checkout, else its full path."""
    return "workspace.yaml" if IN_CHECKOUT else str(project_file("workspace.yaml"))


def resolve_data_dir(override: str | None = None) -> Path:
    """``override``, else ``$VRAMLAB_DATA_DIR``, else ``data/`` at the repository root."""
    return Path(override) if override else settings().data_dir


def default_dagster_home() -> Path:
    """``$DAGSTER_HOME``, else ``.dagster_home/`` in the checkout; installed, ``.dagster_home/`` in the data
    directory (never inside the package)."""
    if os.environ.get("DAGSTER_HOME"):
        return Path(os.environ["DAGSTER_HOME"])
    return REPO_ROOT / ".dagster_home" if IN_CHECKOUT else DataDir(settings().data_dir).dagster_home


def dagster_home() -> Path:
    """:func:`default_dagster_home`, created with the project's dagster.yaml when missing."""
    home = default_dagster_home()
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists():
        shutil.copy(BUNDLED_INSTANCE_CONFIG, home / "dagster.yaml")
    return home


def stoppable_by_sigterm() -> None:
    """Undo an inherited "ignore SIGTERM". A run started from a backgrounded shell job inherits SIGINT ignored;
    Dagster then maps SIGTERM to the same disposition, and every child inherits it: the ``tail -F`` processes
    that mirror each step's compute log survive Dagster's ``terminate()`` and keep the run's stdout open, so a
    caller reading that output (cron, a wrapper script, a test) waits forever and the tails pile up hour after
    hour. A batch job must stop on SIGTERM anyway; only the main thread may set signal dispositions."""
    import signal

    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


#: the summary's label column: its longest label, so the summary's parts line up
_LABEL_WIDTH = len("cheapest GPU-hour")


def _summary_table() -> Table:
    table = Table(title=None, show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold", min_width=_LABEL_WIDTH)
    table.add_column()
    return table


class RunConsole(Console):
    """The run's console. When the reader goes away (``vramlab run | head``) the output goes to /dev/null and the
    run goes on: the data is still fetched, sized and published, and the exit status is the run's own (rich's
    default would stop the run with status 1 halfway through)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        discard_stdout()


def run_main_job(data_dir: str | None = None, ephemeral: bool = False, quiet: bool = False,
                 force: bool = False) -> int:
    if data_dir:  # before the definitions are imported: their resources read it
        os.environ["VRAMLAB_DATA_DIR"] = data_dir
    stoppable_by_sigterm()
    import dagster as dg

    from pipeline.definitions import ALL_ASSETS, defs
    from pipeline.schedules import ACTIVE, REFRESH_JOB, REFRESH_TAG
    console = RunConsole()
    s = settings()
    damaged = _damaged_database(s.db_path)
    if damaged:  # one clear message, nothing run
        console.print(f"[red]vramlab: error: {damaged}[/red]")
        return 3
    # one vramlab run per data directory at a time: a second one queues here, saying so, until the first ends
    # or dies (the kernel drops a dead process's lock); held until the run is summarized
    with run_lock(s.data_dir, console):
        if ephemeral:
            instance = dg.DagsterInstance.ephemeral()
            where = "a throw-away Dagster instance (--ephemeral)"
        else:
            home, instance = _persistent_instance(dg)
            where = f"Dagster instance {home}"
            # a killed vramlab run (or parts run) left its run STARTED, holding its duckdb pool slot (no daemon
            # monitors them): mark it failed and give its slot back before looking for active runs
            release_dead_runs(instance, lambda line: console.print(line, style="yellow"))
            active = instance.get_runs(dg.RunsFilter(tags=REFRESH_TAG, statuses=ACTIVE), limit=1)
            if active and not force:
                raise UserError(f"refresh run {active[0].run_id} is still {active[0].status.value.lower()} in {home}: "
                               "not starting another (if that process is gone: vramlab run --force)")
        job = defs.resolve_job_def(REFRESH_JOB)
        run_id = dg.make_new_run_id() if hasattr(dg, "make_new_run_id") else _new_run_id()
        console.print(f"vramlab: job {REFRESH_JOB}, {len(ALL_ASSETS)} step(s) over "
                      f"{len(job.asset_layer.selected_asset_keys)} assets ({'offline replay' if s.replay else 'live sources'})"
                      f" into {s.data_dir}; recorded in {where} as run {run_id[:8]}")
        outcome: dict[str, Any] = {}

        def execute() -> None:
            try:
                outcome["result"] = job.execute_in_process(
                    instance=instance, run_id=run_id, raise_on_error=False,
                    tags={**REFRESH_TAG, **CLI_TAGS, **owner_tags("run")},  # whose process it is
                    run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}})
            except BaseException as exc:  # noqa: BLE001 - reported below, never lost in the thread
                outcome["error"] = exc

        worker = threading.Thread(target=execute, name="vramlab-run", daemon=True)
        started = time.monotonic()
        stop = _stop_on_sigterm()
        worker.start()
        _follow(worker, instance, run_id, len(job.asset_layer.selected_asset_keys), console, quiet, stop)
        if stop.is_set():
            _stop_run(instance, run_id, DataDir(s.data_dir).exports)
        worker.join()
        if "error" in outcome:
            raise outcome["error"]
        result = outcome["result"]
        code = summarize(result, instance, run_id, s, console, time.monotonic() - started)
        return 143 if stop.is_set() else code


def _persistent_instance(dg):  # type: ignore[no-untyped-def] - the dagster module, imported by the caller
    """The Dagster instance in ``$DAGSTER_HOME`` (else ``.dagster_home/``), or one line saying why it cannot be
    used (a folder that cannot be created or written: read-only, a file in the way, no permission)."""
    home = default_dagster_home()
    try:
        home = dagster_home()
        probe = home / f".vramlab-write-probe-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
        os.environ["DAGSTER_HOME"] = str(home)
        return home, dg.DagsterInstance.get()
    except OSError as exc:
        raise UserError(f"DAGSTER_HOME {home} cannot be used ({exc.strerror or exc}): point DAGSTER_HOME at a "
                        "writable folder, or run with --ephemeral") from None


#: run by the SIGTERM handler's clean-up process: wait for the run process to end, then remove ``.tmp-*`` folders
_REMOVE_AFTER_EXIT = """
import os, shutil, sys, time
from pathlib import Path
pid, exports = int(sys.argv[1]), Path(sys.argv[2])
for _ in range(600):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        break
    time.sleep(0.05)
for tmp in exports.glob(".tmp-*"):
    shutil.rmtree(tmp, ignore_errors=True)
"""


def _stop_on_sigterm() -> threading.Event:
    """SIGTERM (a stopped service, a timeout wrapper) during a run: the handler only records it. The follow loop
    sees it within a second and ends the run (:func:`_stop_run`) outside the handler: that work takes Dagster's
    storage locks, which the code the signal interrupted may hold (a handler doing it deadlocked 1 run in 8).
    Only the main thread can install it; elsewhere the event is never set."""
    import signal

    stop = threading.Event()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda _signum, _frame: stop.set())
    return stop


def _stop_run(instance, run_id: str, exports_dir: Path) -> None:  # type: ignore[no-untyped-def]
    """End a run on SIGTERM: mark it failed in the instance (not left STARTED until the next run), give its pool
    slots back, have a half-written snapshot folder removed (``.tmp-*``; ``latest`` still points at the last
    published one), then exit 143."""
    try:
        run = instance.get_run_by_id(run_id)
        if run is not None and not run.is_finished:
            instance.report_run_failed(run, "the vramlab run process was stopped (SIGTERM): run marked failed, "
                                            "its pool slots released and its unpublished snapshot removed")
            instance.event_log_storage.free_concurrency_slots_for_run(run_id)
    finally:
        # the half-written snapshot is removed by a small process that waits for this one to be gone: removing
        # it here would race the run's writer thread, which may still create files until os._exit
        subprocess.Popen([sys.executable, "-c", _REMOVE_AFTER_EXIT, str(os.getpid()), str(exports_dir)],
                         start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
        os._exit(143)


def _new_run_id() -> str:
    import uuid

    return str(uuid.uuid4())


def _follow(worker: threading.Thread, instance: Any, run_id: str, total: int, console: Console,  # noqa: ANN401
            quiet: bool, stop: threading.Event) -> None:
    """A progress bar fed by the run's own event log: one tick per materialized asset, the running step named.
    Returns when the run's thread ends or ``stop`` is set."""
    from dagster import DagsterEventType

    kinds = {DagsterEventType.STEP_START, DagsterEventType.ASSET_MATERIALIZATION, DagsterEventType.STEP_FAILURE}
    columns = (TextColumn("{task.description}"), BarColumn(bar_width=30), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, disable=quiet, transient=False) as progress:
        task = progress.add_task("starting", total=total)
        seen = 0
        while True:
            alive = worker.is_alive()
            try:
                records = instance.all_logs(run_id, of_type=kinds)
            except Exception:  # noqa: BLE001 - the run may not be stored yet
                records = []
            done, running, failed = 0, None, 0
            for record in records:
                event = record.dagster_event
                if event.event_type == DagsterEventType.ASSET_MATERIALIZATION:
                    done += 1
                elif event.event_type == DagsterEventType.STEP_FAILURE:
                    failed += 1
                elif event.event_type == DagsterEventType.STEP_START:
                    running = event.step_key
            if done != seen or running:
                seen = done
                label = f"running {running}" if running and alive else "finishing"
                progress.update(task, completed=min(done, total),
                                description=label + (f" ({failed} failed)" if failed else ""))
            if not alive:
                progress.update(task, completed=min(done, total), description="done")
                return
            if stop.wait(1.0):
                progress.update(task, description="stopping (SIGTERM)")
                return


def _metadata(result: Any, key: str) -> dict[str, Any]:  # noqa: ANN401
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        if mat.asset_key.to_user_string() == key:
            return {k: getattr(v, "value", v) for k, v in mat.metadata.items()}
    return {}


def summarize(result: Any, instance: Any, run_id: str, s: Any, console: Console, seconds: float) -> int:  # noqa: ANN401
    import dagster as dg

    from pipeline.exports.snapshot_offers import latest_snapshot
    from pipeline.storage.db import DatabaseDamaged

    outcomes: dict[str, dict[str, Any]] = {}
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        key = mat.asset_key.to_user_string()
        if key.startswith("raw_prices__"):
            md = {k: getattr(v, "value", v) for k, v in mat.metadata.items()}
            outcomes[key.removeprefix("raw_prices__").replace("_", "-")] = md
    failed_sources = {k: v for k, v in outcomes.items() if v.get("outcome") not in HEALTHY}
    failed_checks, warned_checks = [], []
    for e in result.get_asset_check_evaluations():
        if e.passed:
            continue
        text = f"{e.asset_key.to_user_string()}:{e.check_name}" + (f" ({e.description})" if e.description else "")
        (warned_checks if e.severity == dg.AssetCheckSeverity.WARN else failed_checks).append(text)
    failed_steps = [e.step_key for e in result.all_node_events if e.is_step_failure]
    damaged = next((d for d in failure_descriptions(result) if DatabaseDamaged.described(d)), None)
    exports = _metadata(result, "out__exports")
    snapshot = latest_snapshot(s.data_dir)
    head, table = _summary_table(), _summary_table()
    head.add_row("run", f"{run_id} ({'succeeded' if result.success else 'FAILED'}, {seconds:,.0f} s)")
    console.print(head)
    # the snapshot's path on one line whatever the width (a script reads it; a cropped or folded path is no path)
    published = str(exports.get("snapshot") or (snapshot.path if snapshot else "none published"))
    console.print(Text.assemble(("snapshot".ljust(_LABEL_WIDTH), "bold"), "  ", published), soft_wrap=True)
    table.add_row("models sized", _models_line(snapshot))
    table.add_row("sources", f"{len(outcomes) - len(failed_sources)} of {len(outcomes)} ok, "
                             f"{sum(int(v.get('offers') or 0) for v in outcomes.values()):,} offers fetched")
    quality = _metadata(result, "core__offer_quality")
    if snapshot is not None:
        per_alloc, quarantined, cheapest = _offer_facts(snapshot)
        if "quarantined" in quality:  # the offer-quality stage's own count (never in cheapest setups)
            quarantined = (f"{int(quality['quarantined']):,} offers (kept as evidence, never in cheapest setups); "
                           f"{int(quality.get('eligible_offers') or 0):,} eligible")
        table.add_row("offers", ", ".join(f"{n:,} {a}" for a, n in per_alloc) or "none")
        table.add_row("quarantined", quarantined)
        table.add_row("cheapest GPU-hour", "; ".join(cheapest) or "no H100/H200/B200 offer")
    problems = [f"source {k}: {v.get('outcome')} {str(v.get('message') or '')[:60]}".strip()
                for k, v in sorted(failed_sources.items())]
    problems += [f"check {c}" for c in failed_checks] + [f"step {k}" for k in failed_steps]
    table.add_row("failures", "none" if not problems else problems[0])
    for p in problems[1:]:
        table.add_row("", p)
    notes = [f"check {w}" for w in warned_checks]  # checks of WARN severity: worth a look, not a failure
    skipped: dict[str, float] = {}  # hosts whose Retry-After outlasted a request's wait (sources/http.py HostGate)
    for md in [*outcomes.values(), _metadata(result, "raw_hub__models")]:
        for host, seconds in (md.get("hosts_skipped") or {}).items():
            skipped[host] = max(float(seconds), skipped.get(host, 0.0))
    notes += [f"host {host} asked to retry after {seconds:.0f} s: skipped for this run"
              for host, seconds in sorted(skipped.items())]
    notes += [f"left out of {t}: " + ", ".join(f"{n:,} {why}" for why, n in r.items())
              for t, r in (exports.get("rows_left_out") or {}).items()]
    notes += [f"not pruned: {name} ({why})" for name, why in (exports.get("prune_skipped") or {}).items()]
    for n, w in enumerate(notes):
        table.add_row("warnings" if n == 0 else "", w)
    console.print(table)
    cli = command_name()
    console.print(f"next: {cli} models | {cli} gpus H100 | {cli} cheapest qwen3-8b | {cli} fit gpt-oss-20b "
                  "--gpu rtx-4090")
    if os.environ.get("DAGSTER_HOME"):
        # the guarded, read-only webserver (pipeline/ops/webui.py): plain dagster-webserver obeys any web page
        webserver = command_name("python") + " -m pipeline.ops.webui"
        console.print(f"UI:   DAGSTER_HOME={os.environ['DAGSTER_HOME']} {webserver} -w {workspace_arg()} --read-only "
                      "(runs, asset metadata and checks, the hourly schedule)")
    if damaged:  # met by a step (damage past what the start-up check reads): the documented code and hint
        console.print(f"vramlab: error: {damaged}", style="red")
        return 3
    return 0 if result.success else 1


def _error_text(error: Any) -> str:  # noqa: ANN401 - Dagster's SerializableErrorInfo or None
    """An error's message and those of its causes (a step out of retries says so; its cause says why)."""
    texts = []
    while error is not None and len(texts) < 5:
        texts.append(str(error.message).strip().rstrip(":"))
        error = error.cause
    return " <- ".join(t for t in texts if t)


def failure_descriptions(result: Any) -> list[str]:  # noqa: ANN401 - a Dagster execution result
    """Why a run failed, in its own words: each failed step's description (or error), else the run's failure
    message and any error an engine event carried (a run can fail with every step succeeded: its executor
    lost a worker, a run-level error)."""
    out = []
    for event in result.all_node_events:
        if event.is_step_failure:
            failure = event.step_failure_data.user_failure_data
            out.append(failure.description if failure is not None and failure.description else
                       _error_text(event.step_failure_data.error))
    if out or result.success:
        return out
    for event in result.all_events:
        error = getattr(event.event_specific_data, "error", None)
        if event.is_engine_event and error is not None:
            out.append(_error_text(error))
    try:
        out.append(str(result.get_run_failure_event().message))
    except Exception:  # noqa: BLE001 - no failure event recorded: nothing more to say
        pass
    return [line for line in out if line]


def command_name(name: str = "vramlab") -> str:
    """How to type a console script so the hint runs as printed: its bare name when the shell finds this very
    environment's copy, else its path (``.venv/bin/vramlab`` after ``python3 tasks.py run``, which does not put the
    virtual environment on PATH), relative to the working directory when it lies below it."""
    import shutil
    import sys

    script = Path(sys.executable).parent / name
    found = shutil.which(name)
    if found and Path(found).resolve() == script.resolve():
        return name
    if not script.exists():
        return name
    try:
        return str(script.relative_to(Path.cwd()))
    except ValueError:
        return str(script)


def _models_line(snapshot: Any) -> str:  # noqa: ANN401
    import json

    if snapshot is None:
        return "-"
    models = json.loads((snapshot.path / "index.json").read_text())["models"]
    ok = [m for m in models if m.get("status", "ok") == "ok"]
    bad = [m["id"] for m in models if m.get("status", "ok") != "ok"]
    return f"{len(ok)} of {len(models)}" + (f" (not sized: {', '.join(bad[:5])})" if bad else "")


def _offer_facts(snapshot: Any) -> tuple[list[tuple[str, int]], str, list[str]]:  # noqa: ANN401
    from pipeline.storage import snapshot_files

    per_alloc, n, rows = snapshot_files.offers_summary(snapshot.path / "offers_current.parquet", MAIN_GPUS)
    quarantined = "not tracked in this snapshot" if n is None else f"{n:,} offers"
    order = {g: i for i, g in enumerate(MAIN_GPUS)}
    cheapest = [f"{g.upper()} ${p:,.2f} ({prov})" for g, p, prov in sorted(rows, key=lambda r: order[r[0]])]
    return per_alloc, quarantined, cheapest


# --- reliability: instance config, run lock, dead CLI runs, damaged database ------------------------------



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


