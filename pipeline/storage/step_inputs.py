"""Queries of the ``step_inputs`` table (sql/026): per output table a step computes whole, the digest of the
inputs its rows were computed from and what that run reported."""

from __future__ import annotations

from datetime import datetime

import duckdb


def recorded(con: duckdb.DuckDBPyConnection, output: str) -> tuple[str, str, datetime] | None:
    """(inputs digest, summary JSON, when recorded) of ``output``'s rows, or None."""
    found = con.execute("SELECT inputs_digest, summary, recorded_at FROM step_inputs WHERE output = ?",
                        [output]).fetchall()
    return found[0] if found else None


def record(con: duckdb.DuckDBPyConnection, output: str, digest: str, summary: str, at: datetime) -> None:
    """Record the inputs digest and summary of ``output``'s rows (inside the transaction that wrote them)."""
    con.execute("INSERT OR REPLACE INTO step_inputs VALUES (?, ?, ?, ?)", [output, digest, summary, at])


def forget(con: duckdb.DuckDBPyConnection, output: str) -> None:
    """Drop ``output``'s record: its rows are being replaced."""
    con.execute("DELETE FROM step_inputs WHERE output = ?", [output])
