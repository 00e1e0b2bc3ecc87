"""Parquet parts vs DuckLake on Postgres for the partition steps' writes (docs/decisions.md): N model
sizing parts written by 2 processes at once, as Parquet parts (temp + rename) and as per-model transactions into one
DuckLake table (catalog in Postgres, data files on local disk); then counted back.

DuckLake needs DuckDB 1.5 (its extensions for 2.0 cannot be installed offline here), so this runs in a throw-away
venv, never the project's:

    python3 -m venv /tmp/dl-venv && /tmp/dl-venv/bin/pip install "duckdb==1.5.*" \
        duckdb-extension-ducklake==1.5.5 duckdb-extension-postgres-scanner==1.5.5
    runuser -u postgres -- psql -c "CREATE ROLE dlprobe LOGIN PASSWORD 'dlprobe'" -c "CREATE DATABASE dlprobe OWNER dlprobe"
    /tmp/dl-venv/bin/python scripts/parts_vs_ducklake.py parquet 43   # SRC: sizing parts of a `vramlab parts run`
    /tmp/dl-venv/bin/python scripts/parts_vs_ducklake.py lake 43
"""

import glob
import os
import sys
import time
import uuid
from multiprocessing import Process

import duckdb

SITE = os.environ.get("DL_SITE", "/tmp/dl-venv/lib/python3.11/site-packages")
EXT = SITE + "/duckdb_extension_{0}/extensions/v1.5.5/{0}.duckdb_extension"
SRC = sorted(glob.glob(os.environ.get("PARTS_GLOB", "data/parts/sizing/*/*.parquet")))
WORK = os.environ.get("PROBE_DIR", "/tmp/dlprobe")
N = int(sys.argv[2]) if len(sys.argv) > 2 else 43
PG = "ducklake:postgres:dbname=dlprobe host=127.0.0.1 user=dlprobe password=dlprobe"


def lake(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"LOAD '{EXT.format('postgres_scanner')}'")
    con.execute(f"LOAD '{EXT.format('ducklake')}'")
    con.execute(f"ATTACH '{PG}' AS lake (DATA_PATH '{WORK}/lake_data/')")


def worker(kind: str, ids: range) -> None:
    con = duckdb.connect()
    if kind == "lake":
        lake(con)
    for i in ids:
        src = SRC[i % len(SRC)]
        if kind == "parquet":
            folder = f"{WORK}/parts/m{i}"
            os.makedirs(folder, exist_ok=True)
            tmp = f"{folder}/.tmp-{uuid.uuid4().hex}.parquet"
            con.execute(f"COPY (SELECT '{i}' AS part_model, * FROM read_parquet('{src}')) TO '{tmp}' (FORMAT parquet)")
            os.replace(tmp, f"{folder}/{time.time_ns()}.parquet")
            continue
        for attempt in range(20):  # a conflicting commit is retried (none were needed in the measured runs)
            try:
                con.execute("BEGIN")
                con.execute(f"DELETE FROM lake.sizing WHERE part_model = '{i}'")
                con.execute(f"INSERT INTO lake.sizing SELECT '{i}' AS part_model, * FROM read_parquet('{src}')")
                con.execute("COMMIT")
                break
            except duckdb.Error as exc:
                con.execute("ROLLBACK")
                print("retry", i, str(exc)[:120], flush=True)
                time.sleep(0.05 * (attempt + 1))


def main() -> None:
    kind = sys.argv[1]
    if kind == "lake":
        con = duckdb.connect()
        lake(con)
        con.execute("CREATE OR REPLACE TABLE lake.sizing AS SELECT '' AS part_model, * "
                    f"FROM read_parquet('{SRC[0]}') LIMIT 0")
        con.close()
    start = time.perf_counter()
    procs = [Process(target=worker, args=(kind, range(k, N, 2))) for k in range(2)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
    wrote = time.perf_counter() - start
    con = duckdb.connect()
    start = time.perf_counter()
    if kind == "lake":
        lake(con)
        rows = con.execute("SELECT count(*) FROM lake.sizing").fetchall()[0][0]
    else:
        rows = con.execute(f"SELECT count(*) FROM read_parquet('{WORK}/parts/*/*.parquet')").fetchall()[0][0]
    print(f"{kind}: {N} parts by 2 processes in {wrote:.2f} s; read back {rows} rows in "
          f"{time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
