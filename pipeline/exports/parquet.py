"""Write a published table to Parquet with its dictionary inside: each Arrow field carries ``description`` and
``unit`` metadata (stored in the file's ARROW:schema, read by pyarrow/Arrow readers), and the file's key-value
metadata carries the whole table's dictionary as JSON under ``vramlab:columns`` (DuckDB: ``parquet_kv_metadata``;
polars: ``pl.read_parquet_metadata``) plus ``vramlab:table`` and ``vramlab:schema_version``, and the run that wrote
it: ``vramlab:mode`` (replay or live) and ``vramlab:as_of`` (ISO 8601, the time freshness was judged against).

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
from pipeline.storage import published


def dictionary_json(table: type[PublishedTable]) -> str:
    return json.dumps([{"name": c.name, "type": c.sql_type, "nullable": c.nullable, "unit": c.unit,
                        "meaning": c.meaning} for c in columns(table)])


#: rows per Parquet row group (pyarrow's default); the query result is streamed in batches and written one row
#: group at a time, so a 2 M-row table never sits in memory whole
ROW_GROUP_ROWS = 1024 * 1024


def dictionary_schema(schema: pa.Schema, table: type[PublishedTable], run: dict[str, str] | None = None) -> pa.Schema:
    specs = {c.name: c for c in columns(table)}
    fields = []
    for field in schema:
        spec = specs[field.name]
        meta = {"description": spec.meaning, "unit": spec.unit or "", "sql_type": spec.sql_type}
        fields.append(pa.field(field.name, field.type, nullable=spec.nullable, metadata=meta))
    return pa.schema(fields, metadata={"vramlab:table": table.__name__, "vramlab:schema_version": SCHEMA_VERSION,
                                       "vramlab:description": table.description,
                                       "vramlab:columns": dictionary_json(table), **run_metadata(run)})


def run_metadata(run: dict[str, str] | None) -> dict[str, str]:
    """``{"mode": ..., "as_of": ...}`` as the files' ``vramlab:mode`` / ``vramlab:as_of`` keys (both required
    when given: a published file always says whether it is replayed and when it was judged)."""
    if run is None:
        return {}
    if run.get("mode") not in ("replay", "live") or not run.get("as_of"):
        raise ValueError(f"a published Parquet file needs mode replay|live and as_of, got {run!r}")
    return {"vramlab:mode": run["mode"], "vramlab:as_of": run["as_of"]}


def with_dictionary(data: pa.Table, table: type[PublishedTable]) -> pa.Table:
    return pa.Table.from_arrays(data.columns, schema=dictionary_schema(data.schema, table))


def _table(batches: list[pa.RecordBatch], raw: pa.Schema, schema: pa.Schema) -> pa.Table:
    return pa.Table.from_arrays(pa.Table.from_batches(batches, schema=raw).columns, schema=schema)


def write_parquet(cur: duckdb.DuckDBPyConnection, query: str, table: type[PublishedTable], target: Path,
                  params: list | None = None, run: dict[str, str] | None = None) -> int:
    """Run ``query`` (already in published names/types; values bound from ``params``) and write it to ``target``
    atomically; return the rows. ``run``: the publishing run's ``mode`` and ``as_of``, written into the file's
    key-value metadata."""
    reader = published.arrow_batches(cur, query, params, 122_880)
    schema = dictionary_schema(reader.schema, table, run)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    rows = 0
    with pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
        pending: list[pa.RecordBatch] = []
        pending_rows = 0
        for batch in reader:
            pending.append(batch)
            pending_rows += batch.num_rows
            if pending_rows >= ROW_GROUP_ROWS:
                writer.write_table(_table(pending, reader.schema, schema), row_group_size=ROW_GROUP_ROWS)
                rows += pending_rows
                pending, pending_rows = [], 0
        if pending or rows == 0:  # (an empty table still gets its schema and one empty row group)
            writer.write_table(_table(pending, reader.schema, schema), row_group_size=ROW_GROUP_ROWS)
            rows += pending_rows
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, target)
    return rows
