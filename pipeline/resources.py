"""Dagster resources: run settings and the DuckDB connection (``dagster_duckdb.DuckDBResource``, explicit SQL)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import dagster as dg
import duckdb
from dagster_duckdb import DuckDBResource

from pipeline.settings import Settings, inside_data_root, settings
from pipeline.sources.replay import series_step
from pipeline.storage.db import DatabaseDamaged, is_damage, migrate, open_database, writer_lock


class VramlabSettings(dg.ConfigurableResource):
    """Where data lives and whether sources are live; defaults come from the environment (pipeline/settings.py)."""

    data_dir: str
    db_path: str
    live: bool = False
    fail_sources: list[str] = []  # failure drill: in replay mode these sources answer HTTP 500
    replay_step: str = ""  # replay series step (pipeline/replay/prices/series.json); "" = current recordings
    workers: int = 0  # processes the CPU-bound steps fork; 0 = VRAMLAB_WORKERS or the default

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        check_run_config_paths(context)

    @classmethod
    def from_env(cls) -> VramlabSettings:
        s = settings()
        return cls(data_dir=str(s.data_dir), db_path=str(s.db_path), live=not s.replay)

    @property
    def settings(self) -> Settings:
        step_as_of = series_step(self.replay_step).as_of if self.replay_step and not self.live else None
        return Settings(data_dir=Path(self.data_dir), db_path=Path(self.db_path), replay=not self.live,
                        replay_step=self.replay_step, step_as_of=step_as_of,
                        workers=self.workers or settings().workers)

    def as_of(self) -> datetime:
        return self.settings.as_of()


def check_run_config_paths(context: dg.InitResourceContext) -> None:
    """Refuse a run whose own run config points the data directory or the DuckDB file outside the data root.

    Only what the run config sets is checked: that is what anyone who can launch a run chooses (the launchpad, a
    GraphQL ``launchRun``); resources built in Python (``vramlab run``, ``rebuild``, tests) are the caller's own
    choice. Called when a resource is set up for a step, before any asset body runs, so a refused run writes
    nothing. The DuckDB connection settings cannot be set from run config at all (a ``temp_directory`` would be
    a path too)."""
    run = getattr(context, "dagster_run", None)
    config = (getattr(run, "run_config", None) or {}).get("resources") or {}
    vramlab = (config.get("vramlab") or {}).get("config") or {}
    duck = (config.get("duckdb") or {}).get("config") or {}
    if duck.get("connection_config"):
        raise dg.Failure(description="run config resources.duckdb.config.connection_config cannot be set from run "
                                     "config: DuckDB settings are the service's own", allow_retries=False)
    given = [(f"resources.vramlab.config.{k}", vramlab[k]) for k in ("data_dir", "db_path") if vramlab.get(k)]
    given += [("resources.duckdb.config.database", duck["database"])] if duck.get("database") else []
    for where, value in given:
        try:
            inside_data_root(where, value)
        except ValueError as exc:
            raise dg.Failure(description=str(exc), allow_retries=False) from None


class VramlabDuckDB(DuckDBResource):
    """``DuckDBResource`` whose file a run's own config cannot move outside the data root."""

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        check_run_config_paths(context)


@contextmanager
def store(db: DuckDBResource) -> Iterator[duckdb.DuckDBPyConnection]:
    """A short DuckDB connection with the schema migrated; every result is drained before it closes.

    Opened by :func:`pipeline.storage.db.open_database` rather than ``DuckDBResource.get_connection``: a damaged
    file fails the step at once with one clear error (``dg.Failure``, no retries) instead of ~100 s of connect
    back-off per step, and a lock held by another process is waited for with a bounded, stated wait."""
    path = Path(db.database)
    log = dg.get_dagster_logger()
    with writer_lock(path) as waited:  # one writer at a time, whatever the pool's claim did (storage/db.py)
        held = time.monotonic()
        log.info(f"DuckDB writer lock taken (waited {waited:.1f} s)")
        try:
            try:
                con = open_database(path, config=dict(db.connection_config or {}))
            except DatabaseDamaged as exc:
                raise dg.Failure(description=str(exc), allow_retries=False) from exc
            try:
                try:
                    migrate(con)
                    yield con
                except duckdb.Error as exc:
                    if is_damage(exc):
                        damaged = DatabaseDamaged(path, exc)
                        raise dg.Failure(description=str(damaged), allow_retries=False) from damaged
                    raise
            finally:
                con.close()
        finally:
            log.info(f"DuckDB writer lock released (held {time.monotonic() - held:.1f} s)")


def default_resources() -> dict[str, object]:
    s = VramlabSettings.from_env()
    return {"vramlab": s, "duckdb": VramlabDuckDB(database=s.db_path)}
