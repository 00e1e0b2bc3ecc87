"""The refresh beyond one process (issue #28): Postgres as Dagster's instance storage, Redis as the Celery
broker, two ``dagster-celery`` workers, all on 127.0.0.1, started and stopped by ``pipeline.ops.cluster`` (the
code behind ``scripts/cluster.py``). The replay refresh runs with every step on the workers; its DuckDB tables and
published files must be the same as an in-process ``vramlab run`` of the same recordings."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from harness import FILLED_BY_ONE_RUN, ROOT, snapshot_content, table_rows

from pipeline.ops.cluster import LocalCluster

VRAMLAB = Path(sys.executable).parent / "vramlab"
#: columns that record when a run did its work, not what it found (measured: the only columns that differ between
#: the two runs besides the usual computed_at/loaded_at/updated_at/applied_at): when a fetch finished, when the Hub
#: record was fetched, and the export cache's key (a hash that includes that fetch time). Fetch start times (the
#: recordings' capture times in replay), landed paths, payload hashes and every published value are compared.
#: ``fetch_seq`` is each fetch's line in fetch_log.jsonl: the order in which the run's concurrent fetches finished
#: (on two workers the Hub and price steps run side by side), not what they found.
RUN_TIMES = {"finished_at", "fetched_at", "cache_key", "applied_at", "fetch_seq"}


def in_process_run(data: Path, home: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "VRAMLAB_DATA_DIR": str(data), "DAGSTER_HOME": str(home)}
    env.pop("VRAMLAB_DB", None)
    out = subprocess.run([str(VRAMLAB), "run", "--quiet"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=1800)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]


def without_run_times(tables: dict[str, list[tuple]], db: Path) -> dict[str, list[tuple]]:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        out = {}
        for table in tables:
            cols = [d[0] for d in con.execute(f"SELECT * FROM {table} LIMIT 0").description]
            keep = [c for c in cols if c not in RUN_TIMES and c not in ("computed_at", "generated_at", "snapshot_id",
                                                                         "loaded_at", "snapshot", "created_at",
                                                                         "latest", "updated_at", "code_version",
                                                                         "updated")]
            if table == "fetch_log":  # a Hub attempt's start time is the clock's (a price fetch's in replay is
                # its recording's), and its landed file is named after it
                keep = [f"CASE WHEN starts_with(source, 'hub:') THEN NULL ELSE {c} END AS {c}"
                        if c in ("started_at", "raw_path") else c for c in keep]
            out[table] = con.execute(f"SELECT {', '.join(keep)} FROM {table} ORDER BY ALL").fetchall()
        return out
    finally:
        con.close()


def by_day(content: dict) -> dict:
    """History parts are named after the snapshot that wrote them (``part-<snapshot>.parquet``): keyed by day."""
    return {re.sub(r"part-[0-9TZ]+\.parquet$", "part.parquet", rel): v for rel, v in content.items()}


def test_refresh_on_two_celery_workers_equals_the_in_process_run(tmp_path: Path) -> None:
    local = tmp_path / "local"
    in_process_run(local / "data", local / "home")
    with LocalCluster(root=tmp_path / "cluster", data_dir=tmp_path / "cluster" / "data", workers=2) as cluster:
        result = cluster.run_refresh()
    assert result["success"], result["log"]
    workers = set(result["steps"].values())
    assert len(result["steps"]) == 12 and len(workers) == 2, result["steps"]  # every step ran, on both workers
    ours = local / "data" / "vramlab.duckdb"
    theirs = tmp_path / "cluster" / "data" / "vramlab.duckdb"
    expected = without_run_times(table_rows(ours), ours)
    got = without_run_times(table_rows(theirs), theirs)
    assert all(expected[t] for t in FILLED_BY_ONE_RUN)
    assert sorted(got) == sorted(expected)
    for table, rows in expected.items():
        assert got[table] == rows, table
    a = by_day(snapshot_content((local / "data" / "exports" / "latest").resolve()))
    b = by_day(snapshot_content((tmp_path / "cluster" / "data" / "exports" / "latest").resolve()))
    assert sorted(a) == sorted(b)
    for rel, content in a.items():
        assert b[rel] == content, rel
