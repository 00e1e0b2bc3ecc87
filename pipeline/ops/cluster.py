"""A Dagster deployment beyond one process, on this machine: Postgres as the instance storage (runs, events, pool
claims that lock their row), Redis as the Celery broker, and N ``dagster-celery`` workers that execute the refresh
job's steps. Everything listens on 127.0.0.1 only. ``scripts/cluster.py up|run|down`` drives it; the same code
runs in ``tests/test_celery.py``.

Postgres is the machine's Debian cluster (``pg_ctlcluster``; started when down), with a role and a database of
vramlab's own; Redis is a private ``redis-server`` process without persistence. Workers import the code location
from the project (``PYTHONPATH``) and write the same data directory and DuckDB file as the in-process run: one
writer at a time is kept by the ``duckdb`` pool (claimed in Postgres) and the writer lock of
``pipeline.resources.store``. On several hosts the data directory would be a shared volume (docs/operating.md).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.compute.workers import die_with_parent
from pipeline.errors import UserError
from pipeline.executors import WORKER_SETTINGS
from pipeline.settings import REPO_ROOT, project_file, work_dir
from pipeline.storage import postgres_admin

PG_USER = "vramlab"
#: loopback only, a throw-away local role; override with DAGSTER_PG_PASSWORD
PG_PASSWORD_DEFAULT = "vramlab-local"


def _run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:  # type: ignore[no-untyped-def]
    return subprocess.run(cmd, capture_output=True, text=True, **kwargs)


def _as_postgres(sql: str, db: str = "postgres") -> subprocess.CompletedProcess:
    """psql as the postgres superuser over the local socket (peer authentication)."""
    runner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    return _run([*runner, "psql", "-v", "ON_ERROR_STOP=1", "-qAt", "-d", db, "-c", sql])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise UserError(f"nothing listens on 127.0.0.1:{port} after {seconds:.0f} s")


def postgres_up() -> int:
    """Start the machine's Postgres cluster when it is down; return its port."""
    clusters = _run(["pg_lsclusters", "--no-header"])
    if clusters.returncode != 0 or not clusters.stdout.strip():
        raise UserError("no Postgres cluster on this machine: apt-get install postgresql")
    version, name, port, status = clusters.stdout.split()[:4]
    if status != "online":
        started = _run(["pg_ctlcluster", version, name, "start"])
        if started.returncode != 0:
            raise UserError(f"pg_ctlcluster {version} {name} start failed: {started.stderr.strip()[:300]}")
    _wait_port(int(port), 60)
    return int(port)


@dataclass
class LocalCluster:
    """Postgres storage, a Redis broker and ``workers`` Celery workers for one Dagster instance under ``root``."""

    root: Path
    data_dir: Path
    workers: int = 2
    db_name: str = ""  # default: one database per root (:meth:`__post_init__`), never another cluster's
    redis_port: int = field(default_factory=_free_port)
    processes: list[subprocess.Popen] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.db_name:
            digest = hashlib.sha256(str(self.root.resolve()).encode()).hexdigest()[:12]
            self.db_name = f"vramlab_dagster_{digest}"

    @property
    def home(self) -> Path:
        return self.root / "dagster_home"

    @property
    def broker(self) -> str:
        return f"redis://127.0.0.1:{self.redis_port}/0"

    def env(self) -> dict[str, str]:
        """What every process of the deployment needs: the instance, the broker, the project, the data."""
        return {**os.environ, "DAGSTER_HOME": str(self.home), "VRAMLAB_CELERY_BROKER": self.broker,
                "VRAMLAB_DATA_DIR": str(self.data_dir), "PYTHONPATH": str(REPO_ROOT),
                "DAGSTER_PG_PASSWORD": os.environ.get("DAGSTER_PG_PASSWORD", PG_PASSWORD_DEFAULT),
                # dagster-celery starts `celery` from PATH: the one installed beside this Python
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}

    def up(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        port = postgres_up()
        self._database(port)
        self._instance_config(port)
        self.processes.append(subprocess.Popen(
            ["redis-server", "--bind", "127.0.0.1", "--port", str(self.redis_port), "--save", "",
             "--appendonly", "no", "--dir", str(self.root)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent))  # ends with this process, however it ends
        _wait_port(self.redis_port, 30)
        # create the instance's tables once, before the workers start (each would race to create them)
        made = subprocess.run([sys.executable, "-c", "import dagster as dg; dg.DagsterInstance.get().dispose()"],
                              cwd=work_dir(), env=self.env(), capture_output=True, text=True, timeout=300)
        if made.returncode != 0:
            raise UserError(f"the Postgres instance storage could not be set up: {made.stderr.strip()[-500:]}")
        # the worker's Celery configuration as the module dagster_celery.app reads (what `dagster-celery worker
        # start` would write); the worker is started directly, not through that wrapper, so that it is this
        # process's child and ends with it (the wrapper's own child outlived a killed parent)
        config_dir = self.root / "celery_config"
        config_dir.mkdir(parents=True, exist_ok=True)
        settings = {"broker_url": self.broker, "result_backend": self.broker, **WORKER_SETTINGS}
        (config_dir / "dagster_celery_config.py").write_text("".join(f"{k} = {v!r}\n" for k, v in settings.items()))
        env = self.env() | {"PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{config_dir}"}
        celery = Path(sys.executable).parent / "celery"
        for n in range(self.workers):
            log = open(self.root / f"worker-{n}.log", "w")  # noqa: SIM115 - open for the worker's lifetime
            self.processes.append(subprocess.Popen(
                [str(celery), "-A", "dagster_celery.app", "worker", "--prefetch-multiplier=1", "--loglevel", "INFO",
                 "-n", f"vramlab-{n}@%h", "--concurrency", "1"],
                cwd=work_dir(), env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                preexec_fn=die_with_parent))
        self._wait_workers()

    def _database(self, port: int) -> None:
        exists = _as_postgres(postgres_admin.role_exists(PG_USER))
        if exists.returncode != 0:
            raise UserError(f"psql as postgres failed: {exists.stderr.strip()[:300]}")
        had_role = bool(exists.stdout.strip())
        made = _as_postgres(postgres_admin.login_role(PG_USER, self.env()["DAGSTER_PG_PASSWORD"], exists=had_role))
        if made.returncode != 0:
            raise UserError(f"cannot {'alter' if had_role else 'create'} role {PG_USER}: {made.stderr.strip()[:300]}")
        _as_postgres(postgres_admin.drop_database(self.db_name))
        made = _as_postgres(postgres_admin.create_database(self.db_name, PG_USER))
        if made.returncode != 0:
            raise UserError(f"cannot create database {self.db_name}: {made.stderr.strip()[:300]}")

    def _instance_config(self, port: int) -> None:
        """vramlab's dagster.yaml (pools, run limits, monitoring) with Postgres as the storage."""
        import yaml

        config = yaml.safe_load(project_file("dagster.yaml").read_text())
        config["storage"] = {"postgres": {"postgres_db": {
            "hostname": "127.0.0.1", "port": port, "db_name": self.db_name, "username": PG_USER,
            "password": {"env": "DAGSTER_PG_PASSWORD"},
            # psycopg2, the driver dagster-postgres is written against (SQLAlchemy 2.1 defaults to psycopg 3,
            # whose server-side binding rejects dagster's `NOTIFY run_events, %(id)s`)
            "scheme": "postgresql+psycopg2"}}}
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "dagster.yaml").write_text(yaml.safe_dump(config, sort_keys=False))

    def _wait_workers(self, seconds: float = 180) -> None:
        """Until every worker answers a Celery ping (they import Dagster and the code location first)."""
        from celery import Celery

        app = Celery(broker=self.broker, backend=self.broker)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for proc in self.processes[1:]:
                if proc.poll() is not None:
                    raise UserError(f"a Celery worker exited ({proc.returncode}); see {self.root}/worker-*.log")
            answers = app.control.ping(timeout=1.0) or []
            if len(answers) >= self.workers:
                return
            time.sleep(1)
        raise UserError(f"{self.workers} Celery workers did not answer within {seconds:.0f} s")

    def run_refresh(self, timeout: float = 3600) -> dict:
        """The refresh job with its steps on the Celery workers, recorded in the Postgres instance; run in a
        process of its own so the broker is set before the code location is imported. Returns the run's id,
        success and which worker ran each step."""
        out = subprocess.run([sys.executable, "-m", "pipeline.ops.cluster_run"], cwd=work_dir(), env=self.env(),
                             capture_output=True, text=True, timeout=timeout, preexec_fn=die_with_parent)
        if out.returncode != 0 and not out.stdout.strip():
            raise UserError(f"the Celery refresh did not run: {out.stderr.strip()[-800:]}")
        import json

        return json.loads(out.stdout.strip().splitlines()[-1]) | {"log": out.stderr[-4000:]}

    def down(self) -> None:
        for proc in reversed(self.processes):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except (ProcessLookupError, PermissionError):
                    proc.terminate()
        for proc in self.processes:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.processes.clear()
        _as_postgres(postgres_admin.drop_database(self.db_name))

    def __enter__(self) -> LocalCluster:
        try:
            self.up()
        except BaseException:
            self.down()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()


def clean(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)
