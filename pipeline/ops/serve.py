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
from pipeline.settings import REPO_ROOT, settings


def _tool(name: str) -> str:
    """The Dagster command installed beside this Python (the project's .venv)."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        raise UserError(f"{name} is not installed beside {sys.executable}: run `python3 tasks.py setup` first")
    return str(path)


def serve(host: str = "127.0.0.1", port: int = 3000, data_dir: str | None = None, *, cron: str | None = None,
          console: Console | None = None) -> int:
    """Run the daemon and the webserver until stopped; the exit status is the first child's that ends badly."""
    console = console or Console()
    if data_dir:
        os.environ["VRAMLAB_DATA_DIR"] = data_dir
    try:
        home = dagster_home()
    except OSError as exc:
        raise UserError(f"DAGSTER_HOME cannot be used ({exc.strerror or exc}): point it at a writable folder") \
            from None
    ensure_instance_config(home, console)
    env = {**os.environ, "DAGSTER_HOME": str(home), "VRAMLAB_SCHEDULE_ON": "1",
           "VRAMLAB_DATA_DIR": str(settings().data_dir)}
    if cron:
        env["VRAMLAB_SCHEDULE_CRON"] = cron
    workspace = str(REPO_ROOT / "workspace.yaml")
    children = [
        subprocess.Popen([_tool("dagster-daemon"), "run", "-w", workspace], cwd=REPO_ROOT, env=env),
        subprocess.Popen([_tool("dagster-webserver"), "-w", workspace, "-h", host, "-p", str(port)], cwd=REPO_ROOT,
                         env=env),
    ]
    console.print(f"vramlab serve: schedule hourly_refresh ({env.get('VRAMLAB_SCHEDULE_CRON', '0 * * * *')}, UTC) "
                  f"on, instance {home}, data {env['VRAMLAB_DATA_DIR']}; UI http://{host}:{port} (Ctrl-C stops both)")
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
                console.print(f"[red]vramlab serve: {Path(ended[0].args[0]).name} ended with status "
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
