"""The DuckDB store: one file, schema from the numbered migrations in ``sql/`` (applied once each, in order,
recorded in ``schema_version``). No table is created anywhere else."""

from __future__ import annotations

import fcntl
import os
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from pipeline.settings import project_file, variable

SQL_DIR = project_file("sql")
MIGRATION = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")


def migrations() -> list[tuple[int, Path]]:
    found = sorted((int(m.group(1)), p) for p in SQL_DIR.glob("*.sql") if (m := MIGRATION.match(p.name)))
    versions = [v for v, _ in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"duplicate migration numbers in {SQL_DIR}: {versions}")
    return found


def migrate(con: duckdb.DuckDBPyConnection) -> list[int]:
    """Apply the migrations not applied yet, each in its own transaction; return the versions applied."""
    con.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, "
                "applied_at TIMESTAMPTZ NOT NULL DEFAULT current_timestamp)")
    done = {row[0] for row in con.execute("SELECT version FROM schema_version").fetchall()}
    applied = []
    for version, path in migrations():
        if version in done:
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(path.read_text())
            con.execute("INSERT INTO schema_version (version, name) VALUES (?, ?)", [version, path.name])
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
        applied.append(version)
    return applied


class DatabaseDamaged(RuntimeError):
    """The DuckDB file exists but cannot be read: one clear error, never retried, never replaced silently."""

    #: the words every message of this error carries: how a run's summary knows a step met a damaged file
    HINT = "Recover with `vramlab rebuild`"

    def __init__(self, path: Path, cause: BaseException):
        self.path = path
        super().__init__(
            f"DuckDB file {path} is damaged ({type(cause).__name__}: {str(cause).splitlines()[0][:300]}). Nothing "
            f"was written. {self.HINT} (moves the damaged file aside and re-creates every table "
            f"from the raw landing in {path.parent / 'raw'}); see docs/operating.md, 'Damaged database'.")

    @classmethod
    def described(cls, text: str | None) -> bool:
        """Whether a step failure's description is this error's message."""
        return bool(text) and " is damaged (" in text and cls.HINT in text


class DatabaseBusy(RuntimeError):
    """Another process holds the DuckDB write lock for longer than we are willing to wait."""


_DAMAGED = ("not a valid duckdb database file", "corrupt database file", "checksum", "serialization error",
            "failed to read", "invalid database header", "could not read enough bytes")


_LOCKED = ("could not set lock", "conflicting lock")


def is_locked(exc: BaseException) -> bool:
    return any(m in str(exc).lower() for m in _LOCKED)


def is_damage(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, duckdb.Error) and not is_locked(exc) and any(m in text for m in _DAMAGED)


def lock_wait_seconds() -> float:
    """How long to wait for another process's write lock (``VRAMLAB_DB_LOCK_WAIT``, default 120 s)."""
    return variable("VRAMLAB_DB_LOCK_WAIT").number()


#: DuckDB's buffer pool cap unless ``VRAMLAB_DUCKDB_MEMORY_LIMIT`` says otherwise. DuckDB's own default is 80% of
#: the machine's memory, and it keeps every block a query read until that is reached: at 2,000 models the exports
#: step would hold the whole 31.5 M-row sizing table (~0.9 GiB) while it forks the report's workers. Operators
#: that need more spill to ``<db>.tmp``.
DEFAULT_MEMORY_LIMIT = "512MB"


def memory_limit() -> str:
    """The DuckDB memory limit (``VRAMLAB_DUCKDB_MEMORY_LIMIT``: a DuckDB size such as ``2GB``, default 512 MB)."""
    return variable("VRAMLAB_DUCKDB_MEMORY_LIMIT").text()


def _busy_message(path: Path, exc: BaseException) -> str:
    """Who holds the file: a vramlab writer (it holds the writer lock too) or some other reader or writer (a DuckDB
    shell, a notebook, a BI tool) that has the file open."""
    first = str(exc).splitlines()[0]
    lock = writer_lock_path(path)
    writer = False
    if lock.exists():
        fd = os.open(lock, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(fd, fcntl.LOCK_UN)
        except BlockingIOError:
            writer = True
        finally:
            os.close(fd)
    if writer and not getattr(_HELD, "paths", {}).get(lock):
        return f"DuckDB file {path} is being written by another vramlab process ({first}); gave up waiting"
    return (f"DuckDB file {path} is open in another program that is not a vramlab run (a DuckDB shell, notebook or "
            f"dashboard holding it: {first}); close it and run again")


def open_database(path: Path, *, config: dict | None = None, lock_wait: float | None = None,
                  sleep=time.sleep) -> duckdb.DuckDBPyConnection:  # type: ignore[no-untyped-def]
    """Open (creating when absent) the DuckDB file. A lock held by another process is waited for (bounded,
    ``DatabaseBusy`` after); a damaged file raises ``DatabaseDamaged`` at once instead of being retried for
    ~100 s like ``DuckDBResource.get_connection`` does for every ``IOException``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + (lock_wait_seconds() if lock_wait is None else lock_wait)
    delay = 0.1
    while True:
        try:
            con = duckdb.connect(str(path), config=config or {})
        except duckdb.Error as exc:
            if is_damage(exc):
                raise DatabaseDamaged(path, exc) from exc
            if not is_locked(exc):
                raise
            if time.monotonic() >= deadline:
                raise DatabaseBusy(_busy_message(path, exc)) from exc
            sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 5.0)
            continue
        try:  # a setting of the database instance, not a connect option: other connections to the file keep working
            con.execute("SET memory_limit = ?", [memory_limit()])
        except duckdb.Error as exc:
            con.close()
            raise ValueError(f"VRAMLAB_DUCKDB_MEMORY_LIMIT={memory_limit()!r} is not a DuckDB memory size "
                             f"(e.g. 512MB, 2GB): {exc}") from exc
        return con


_HELD = threading.local()  # writer locks this thread holds, by lock path (store() may nest)


def writer_lock_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".writer.lock")


@contextmanager
def writer_lock(db_path: Path, *, wait: float | None = None, sleep=time.sleep) -> Iterator[float]:  # type: ignore[no-untyped-def]
    """One DuckDB writer at a time, as a guarantee: an exclusive ``flock`` on ``<db>.writer.lock`` held for the
    whole of a writer's connection, by every process and thread that writes (``pipeline.resources.store``). The
    Dagster pool stays the scheduler (it decides which step runs); this lock is what makes two writers at once
    impossible even when two steps claim the pool slot in the same instant (SQLite instance storage). Waits at
    most ``VRAMLAB_DB_LOCK_WAIT`` seconds, then ``DatabaseBusy`` naming the holder's pid. Yields the seconds
    waited. Re-entrant within one thread."""
    lock = writer_lock_path(db_path)
    held = getattr(_HELD, "paths", None)
    if held is None:
        held = _HELD.paths = {}
    if held.get(lock):
        held[lock] += 1
        try:
            yield 0.0
        finally:
            held[lock] -= 1
        return
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o644)
    started = time.monotonic()
    deadline = started + (lock_wait_seconds() if wait is None else wait)
    try:
        delay = 0.05
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
                    raise DatabaseBusy(f"DuckDB file {db_path} is being written by another vramlab process (pid "
                                       f"{holder}); gave up waiting after {time.monotonic() - started:.0f} s") from None
                sleep(min(delay, max(0.0, deadline - time.monotonic())))
                delay = min(delay * 2, 1.0)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        held[lock] = 1
        try:
            yield time.monotonic() - started
        finally:
            held.pop(lock, None)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def connect(path: Path) -> duckdb.DuckDBPyConnection:
    con = open_database(path)
    try:
        migrate(con)
    except duckdb.Error as exc:
        con.close()
        if is_damage(exc):
            raise DatabaseDamaged(path, exc) from exc
        raise
    return con


def table_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    return [r[0] for r in con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
        [table]).fetchall()]


def describe(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[Any, ...]]:
    """DuckDB's ``DESCRIBE`` of a table: (column, type, null, key, default, extra) per column."""
    return con.execute(f"DESCRIBE {table}").fetchall()


def utc_cursor(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """A cursor on the same database whose session time zone is UTC (dates and timestamps independent of TZ)."""
    cur = con.cursor()
    cur.execute("SET TimeZone = 'UTC'")
    return cur


@contextmanager
def deferred_checkpoints(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Raise DuckDB's WAL checkpoint threshold while a large table is written chunk by chunk (each commit would
    otherwise checkpoint the growing table again), then checkpoint once."""
    before = con.execute("SELECT current_setting('checkpoint_threshold')").fetchall()[0][0]
    con.execute("SET checkpoint_threshold = '4GB'")
    try:
        yield
    finally:
        con.execute(f"SET checkpoint_threshold = '{before}'")
        try:
            con.execute("CHECKPOINT")
        except duckdb.Error:  # another transaction is open: DuckDB checkpoints at its threshold or on close
            pass
