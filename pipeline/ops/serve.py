"""``vramlab serve``: the hourly service in one command. Starts ``dagster-daemon`` (which runs the ``hourly_refresh``
schedule, on by default here) and ``dagster-webserver`` on one persistent Dagster instance, both loading
``workspace.yaml``; stops both on Ctrl-C or SIGTERM. The instance is ``$DAGSTER_HOME``, else ``.dagster_home/``
in the project, with vramlab's ``dagster.yaml`` installed when missing (the DuckDB pool, run monitoring).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console

from pipeline.errors import UserError
from pipeline.ops.run import dagster_home, ensure_instance_config
from pipeline.settings import project_file, settings, variable, work_dir


def _tool(name: str) -> str:
    """The Dagster command installed beside this Python (the project's .venv)."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        raise UserError(f"{name} is not installed beside {sys.executable}: run `python3 tasks.py setup` first")
    return str(path)


def webserver_command(host: str, port: int, *, allow_launch: bool = False) -> list[str]:
    """The UI's command: Dagster's webserver behind vramlab's guard (``pipeline/ops/webui.py``: Host and Origin
    checked, no GraphQL mutation over GET), read-only unless ``allow_launch``."""
    command = [sys.executable, "-m", "pipeline.ops.webui", "-w", str(project_file("workspace.yaml")), "-h", host,
               "-p", str(port)]
    return command if allow_launch else [*command, "--read-only"]


def serve(host: str = "127.0.0.1", port: int = 3000, data_dir: str | None = None, *, cron: str | None = None,
          console: Console | None = None, allow_launch: bool = False, allow_hosts: tuple[str, ...] = ()) -> int:
    """Run the daemon and the webserver until stopped; the exit status is the first child's that ends badly.

    The UI is read-only unless ``allow_launch`` (launching runs and backfills, turning schedules on and off);
    either way it answers only requests addressed to this machine's names or ``allow_hosts`` (the name an
    authenticating reverse proxy forwards), never a cross-site request."""
    console = console or Console()
    if data_dir:
        os.environ["VRAMLAB_DATA_DIR"] = data_dir
    try:
        home = dagster_home()
    except OSError as exc:
        raise UserError(f"DAGSTER_HOME cannot be used ({exc.strerror or exc}): point it at a writable folder") \
            from None
    ensure_instance_config(home, console)
    child_env = {**os.environ, "DAGSTER_HOME": str(home), "VRAMLAB_SCHEDULE_ON": "1",
           "VRAMLAB_DATA_DIR": str(settings().data_dir)}
    if cron:
        child_env["VRAMLAB_SCHEDULE_CRON"] = cron
    names = [n for n in (variable("VRAMLAB_UI_ALLOWED_HOSTS").text().split(",") + list(allow_hosts)) if n.strip()]
    child_env.update({"VRAMLAB_UI_BIND_HOST": host, "VRAMLAB_UI_ALLOWED_HOSTS": ",".join(names)})
    workspace = str(project_file("workspace.yaml"))
    _tool("dagster-webserver")  # installed beside this Python: the guard runs its command
    children = [
        subprocess.Popen([_tool("dagster-daemon"), "run", "-w", workspace], cwd=work_dir(), env=child_env),
        subprocess.Popen(webserver_command(host, port, allow_launch=allow_launch), cwd=work_dir(), env=child_env),
    ]
    names_of = {children[0].pid: "dagster-daemon", children[1].pid: "dagster-webserver"}
    mode = "launching allowed" if allow_launch else "read-only (--allow-launch to launch from it)"
    console.print(f"vramlab serve: schedule hourly_refresh ({child_env.get('VRAMLAB_SCHEDULE_CRON') or variable('VRAMLAB_SCHEDULE_CRON').text()}, UTC) "
                  f"on, instance {home}, data {child_env['VRAMLAB_DATA_DIR']}; UI http://{host}:{port}, {mode} "
                  "(Ctrl-C stops both)")
    if host not in ("127.0.0.1", "localhost", "::1"):
        console.print(f"[yellow]vramlab serve: the UI listens on {host}: it has no login of its own. Keep it on "
                      "127.0.0.1 behind a reverse proxy that authenticates (basic auth, OIDC), and name the proxy's "
                      "host with --allow-host (docs/operating.md)[/yellow]")
    stopping = False

    def stop(_signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    code = 0
    try:
        while not stopping:
            ended = [c for c in children if c.poll() is not None]
            if ended:
                code = ended[0].returncode or 1
                console.print(f"[red]vramlab serve: {names_of[ended[0].pid]} ended with status "
                              f"{ended[0].returncode}; stopping[/red]")
                break
            time.sleep(0.5)
    finally:
        for child in children:
            if child.poll() is None:
                child.terminate()
        for child in children:
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
    return code
