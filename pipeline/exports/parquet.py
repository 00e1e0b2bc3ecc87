"""Write a published table to Parquet with its dictionary inside: each Arrow field carries ``description`` and
``unit`` metadata (stored in the file's ARROW:schema, read by pyarrow/Arrow readers), and the file's key-value
metadata carries the whole table's dictionary as JSON under ``vramlab:columns`` (DuckDB: ``parquet_kv_metadata``;
polars: ``pl.read_parquet_metadata``) plus ``vramlab:table`` and ``vramlab:schema_version``.

Timestamps are written as UTC whatever the session time zone (the caller's cursor is pinned to UTC)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.exports.schema import SCHEMA_VERSION
from pipeline.exports.tables import PublishedTable, columns


def utc_cursor(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """A cursor on the same database whose session time zone is UTC (dates and timestamps independent of TZ)."""
    cur = con.cursor()
    cur.execute("SET TimeZone = 'UTC'")
    return cur


def dictionary_json(table: type[PublishedTable]) -> str:
    return json.dumps([{"name": c.name, "type": c.sql_type, "nullable": c.nullable, "unit": c.unit,
                        "meaning": c.meaning} for c in columns(table)])


def with_dictionary(data: pa.Table, table: type[PublishedTable]) -> pa.Table:
    specs = {c.name: c for c in columns(table)}
    fields = []
    for field in data.schema:
        spec = specs[field.name]
        meta = {"description": spec.meaning, "unit": spec.unit or "", "sql_type": spec.sql_type}
        fields.append(pa.field(field.name, field.type, nullable=spec.nullable, metadata=meta))
    schema = pa.schema(fields, metadata={"vramlab:table": table.__name__, "vramlab:schema_version": SCHEMA_VERSION,
                                         "vramlab:description": table.description,
                                         "vramlab:columns": dictionary_json(table)})
    return pa.Table.from_arrays(data.columns, schema=schema)


def write_parquet(cur: duckdb.DuckDBPyConnection, query: str, table: type[PublishedTable], target: Path) -> int:
    """Run ``query`` (already in published names/types) and write it to ``target`` atomically; return the rows."""
    data = with_dictionary(cur.sql(query).to_arrow_table(), table)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    pq.write_table(data, tmp, compression="zstd")
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, target)
    return data.num_rows
