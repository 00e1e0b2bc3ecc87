"""DuckDB's memory limit: every connection the pipeline opens caps DuckDB's buffer pool, which otherwise
keeps every block a query read until 80% of the machine's memory is used."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from pipeline.storage.db import DEFAULT_MEMORY_LIMIT, open_database


def _limit(con: duckdb.DuckDBPyConnection) -> str:
    return con.execute("SELECT current_setting('memory_limit')").fetchone()[0]


def _as_duckdb_shows(size: str) -> str:
    """How DuckDB itself reports ``size`` (it shows binary units: 512MB is 488.2 MiB)."""
    con = duckdb.connect()
    con.execute(f"SET memory_limit = '{size}'")
    return _limit(con)


def test_connections_get_the_default_limit_or_the_environments(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VRAMLAB_DUCKDB_MEMORY_LIMIT", raising=False)
    con = open_database(tmp_path / "v.duckdb")
    assert _limit(con) == _as_duckdb_shows(DEFAULT_MEMORY_LIMIT) != _as_duckdb_shows("80%")
    con.close()
    monkeypatch.setenv("VRAMLAB_DUCKDB_MEMORY_LIMIT", "2GB")
    con = open_database(tmp_path / "v.duckdb")
    assert _limit(con) == _as_duckdb_shows("2GB")
    con.close()


def test_a_bad_limit_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VRAMLAB_DUCKDB_MEMORY_LIMIT", "lots")
    with pytest.raises(ValueError, match="VRAMLAB_DUCKDB_MEMORY_LIMIT='lots' is not a DuckDB memory size"):
        open_database(tmp_path / "v.duckdb")


def test_a_table_larger_than_the_limit_is_still_written_and_read_whole(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """~100 MB of rows under a 32 MB limit: DuckDB evicts and spills instead of failing."""
    monkeypatch.setenv("VRAMLAB_DUCKDB_MEMORY_LIMIT", "32MB")
    con = open_database(tmp_path / "v.duckdb")
    con.execute("CREATE TABLE t AS SELECT i, repeat(chr(CAST(65 + i % 26 AS INTEGER)), 40) || i AS s "
                "FROM range(2000000) r(i)")
    rows = total = 0
    for batch in con.sql("SELECT i, s FROM t").to_arrow_reader(100_000):
        rows += batch.num_rows
        total += sum(batch.column("i").to_pylist())
    assert rows == 2_000_000 and total == 2_000_000 * 1_999_999 // 2
    con.close()
