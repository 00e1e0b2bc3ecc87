"""The DuckDB store: one file, schema from the numbered migrations in ``sql/`` (applied once each, in order,
recorded in ``schema_version``). No table is created anywhere else."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import duckdb

SQL_DIR = Path(__file__).resolve().parents[2] / "sql"
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

    def __init__(self, path: Path, cause: BaseException):
        self.path = path
        super().__init__(
            f"DuckDB file {path} is damaged ({type(cause).__name__}: {str(cause).splitlines()[0][:300]}). Nothing "
            f"was written. Recover with `vramlab rebuild` (moves the damaged file aside and re-creates every table "
            f"from the raw landing in {path.parent / 'raw'}); see docs/operating.md, 'Damaged database'.")


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
    try:
        return float(os.environ.get("VRAMLAB_DB_LOCK_WAIT") or 120.0)
    except ValueError:
        return 120.0


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
            return duckdb.connect(str(path), config=config or {})
        except duckdb.Error as exc:
            if is_damage(exc):
                raise DatabaseDamaged(path, exc) from exc
            if not is_locked(exc):
                raise
            if time.monotonic() >= deadline:
                raise DatabaseBusy(f"DuckDB file {path} is held by another process ({str(exc).splitlines()[0]}); "
                                   "gave up waiting. Is another vramlab run still writing?") from exc
            sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 5.0)


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
