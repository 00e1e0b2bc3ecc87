"""Metadata that makes the Dagster UI worth opening: column schemas read from DuckDB/Parquet, tables instead of
Markdown blobs, and plain floats for figures a reader compares across runs (each materialization keeps its own)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb

from pipeline.storage import snapshot_files
from pipeline.storage.db import describe

#: DuckDB type -> the type name shown in the UI's column schema
_TYPES = {"VARCHAR": "string", "DOUBLE": "float", "FLOAT": "float", "INTEGER": "int", "BIGINT": "int",
          "BOOLEAN": "bool", "TIMESTAMP WITH TIME ZONE": "timestamp", "TIMESTAMP": "timestamp", "DATE": "date",
          "JSON": "json", "HUGEINT": "int", "SMALLINT": "int"}
#: GPUs whose cheapest on-demand $/GPU-hour is numeric metadata (one value per materialization, compared across runs)
PLOTTED_GPUS = ("h100", "h200", "b200", "a100-80gb", "l40s", "rtx-4090")


def column_descriptions(name: str) -> dict[str, str]:
    """Per column, its meaning (and unit) from the data dictionary (``pipeline/exports/tables.py``, published as
    ``schemas/dictionary.json``) for the published table whose DuckDB table or file is ``name`` (``offers_current``,
    ``sizing.parquet``, ...); DuckDB columns the table does not publish say why. Empty for an unpublished table."""
    from pipeline.exports.tables import TABLES, columns

    stem = name.removesuffix(".parquet")
    for t in TABLES:
        if stem in (t.file.removesuffix(".parquet"), t.db_table.split()[0]):
            specs = columns(t)
            out = {c.name: f"{c.meaning} ({c.unit})" if c.unit else c.meaning for c in specs}
            # a DuckDB column published under another name (listed_unit <- unit): described with that name
            for c in specs:
                source = c.sql.split("::")[0].split(".")[-1]
                if source.isidentifier() and source not in out:
                    out[source] = f"{out[c.name]} (published as {c.name})"
            return out | {k: f"not published: {why}" for k, why in t.unpublished.items() if k not in out}
    return {}


def _schema(rows: Iterable[tuple[Any, ...]], described: dict[str, str] | None = None) -> dg.TableSchema:
    described = described or {}
    return dg.TableSchema(columns=[dg.TableColumn(name=name, type=_TYPES.get(str(kind), str(kind).lower()),
                                                  description=described.get(name) or None,
                                                  constraints=dg.TableColumnConstraints(nullable=nullable == "YES"))
                                   for name, kind, nullable, *_ in rows])


def table_schema(con: duckdb.DuckDBPyConnection, table: str) -> dg.TableSchema:
    """The column schema of a DuckDB table, as DuckDB describes it, with the data dictionary's descriptions."""
    return _schema(describe(con, table), column_descriptions(table))


def parquet_schema(path: str) -> dg.TableSchema:
    """The column schema of a published Parquet file, with the data dictionary's descriptions."""
    return _schema(snapshot_files.describe(path), column_descriptions(Path(path).name))


def column_schema(con: duckdb.DuckDBPyConnection, table: str) -> dict[str, Any]:
    """``dagster/column_schema`` metadata for a DuckDB table (the UI's Columns view)."""
    return {"dagster/column_schema": table_schema(con, table)}


def _cell(value: Any) -> Any:  # noqa: ANN401 - a table cell
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    return value


def table(columns: Sequence[tuple[str, str]], rows: Iterable[Sequence[Any]]) -> dg.TableMetadataValue:
    """A TableMetadataValue from (name, type) columns and row tuples; None cells are shown as "-" (every record
    must carry every field)."""
    names = [n for n, _ in columns]
    records = [dg.TableRecord({n: "-" if v is None else _cell(v) for n, v in zip(names, row, strict=True)})
               for row in rows]
    schema = dg.TableSchema(columns=[dg.TableColumn(name=n, type=t) for n, t in columns])
    return dg.MetadataValue.table(records=records, schema=schema)


def gpu_price_series(cheapest: Iterable[Sequence[Any]]) -> dict[str, float]:
    """``cheapest_<gpu>_usd_per_gpu_hour`` floats for the main GPUs present (rows start with gpu id, price)."""
    prices = {row[0]: float(row[1]) for row in cheapest}
    return {f"cheapest_{g.replace('-', '_')}_usd_per_gpu_hour": prices[g] for g in PLOTTED_GPUS if g in prices}
