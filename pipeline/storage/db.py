"""The DuckDB store: one file, schema from the numbered migrations in ``sql/`` (applied once each, in order,
recorded in ``schema_version``). No table is created anywhere else."""

from __future__ import annotations

import re
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


def connect(path: Path) -> duckdb.DuckDBPyConnection:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path))
    migrate(con)
    return con


def table_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    return [r[0] for r in con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position",
        [table]).fetchall()]
