"""What a setup's layout does at a standard load, kept across runs in DuckDB (``sql/025_serving_cache.sql``).

The cheapest setups meeting the default interactive floor (:func:`~pipeline.compute.service_setups.floor_setups`)
are found by serving candidates in price order. Which candidates are served depends on prices; what one layout
(GPU, engine, format, TP x PP, machines, native support) does at a load does not. An hourly run in which only
offers moved therefore serves only the layouts it has not met before, and answers the others from here: the
steady state (or that no request of the load fits) and the two lower bounds that screen a layout out without
serving it. A row is used only while what it was computed from is unchanged: the model's revision, the GPU's
catalog row (its hash) and the code (:func:`serving_version`: the sizing code and the service-level screen)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import fields
from functools import lru_cache
from pathlib import Path
from typing import Any

from pipeline.compute.placement_cache import gpu_row_hash, sizing_version
from sizing_core.gpus import GPU
from sizing_core.serving import Serving

#: (model_id, revision, context, concurrency, kv dtype, gpu_id, gpu row hash, engine, format, TP, PP, machines,
#: native support): one layout at one standard load
Key = tuple[str, str, int, int, str, str, str, str, str, int, int, int, bool]
_KEY_COLUMNS = ("model_id", "revision", "context", "concurrency", "kv_cache_dtype", "gpu_id", "gpu_row_hash",
                "engine", "format", "tensor_parallel", "pipeline_parallel", "nodes", "native_support")
#: the value columns, in the order a cached row (a list) holds them
_VALUES = ("served", "serving", "bound_shortfall")
_SERVED, _SERVING, _BOUND = range(len(_VALUES))
#: column -> its type (Arrow types are built only when the cache is written)
_SCHEMA = {"model_id": "String", "revision": "String", "context": "Int32", "concurrency": "Int32",
           "kv_cache_dtype": "String", "gpu_id": "String", "gpu_row_hash": "String", "engine": "String",
           "format": "String", "tensor_parallel": "Int32", "pipeline_parallel": "Int32", "nodes": "Int32",
           "native_support": "Boolean", "sizing_version": "String", "served": "Boolean", "serving": "String",
           "bound_shortfall": "Strings"}
_SERVING_FIELDS = tuple(f.name for f in fields(Serving))


@lru_cache(maxsize=1)
def serving_version() -> str:
    """The code a row depends on: the sizing code (:func:`~pipeline.compute.placement_cache.sizing_version`), the
    screen's lower bounds beside the servings (``service_setups.py``) and the rows' own shape (this module),
    stored as the row's sizing_version."""
    here = Path(__file__).resolve()
    code = (here.parent / "service_setups.py").read_bytes() + here.read_bytes()
    return hashlib.sha256(sizing_version().encode() + code).hexdigest()[:16]


def serving_text(serving: Serving | None) -> str | None:
    """A steady state as the JSON array of its fields in declared order (floats written exactly, ``Infinity`` for
    an unbounded rate); None stays None."""
    if serving is None:
        return None
    return json.dumps([getattr(serving, name) for name in _SERVING_FIELDS])


def serving_of(text: str | None) -> Serving | None:
    """:func:`serving_text` read back: the same :class:`Serving` (ranges back as tuples)."""
    if text is None:
        return None
    values = json.loads(text)
    return Serving(**{name: tuple(v) if isinstance(v, list) else v
                      for name, v in zip(_SERVING_FIELDS, values, strict=True)})


def _arrow(rows: list[tuple[Any, ...]], columns: tuple[str, ...]) -> Any:  # noqa: ANN401 - a pyarrow Table
    import pyarrow as pa

    from pipeline.storage.loaders import arrow_rows

    types = {"String": pa.string(), "Int32": pa.int32(), "Boolean": pa.bool_(), "Strings": pa.list_(pa.string())}
    return arrow_rows(rows, pa.schema([(c, types[_SCHEMA[c]]) for c in columns]))


class ServingCache:
    """Rows of ``serving_cache`` still valid for this run (for some models), plus what this run computes;
    :meth:`delta` and :meth:`write` write what this run added or completed (a run that only re-used rows writes
    nothing)."""

    def __init__(self, rows: dict[Key, list[Any]] | None = None):
        self.rows: dict[Key, list[Any]] = rows or {}
        self.hits = {"serving": 0, "bound": 0}  # lookups answered from the table, per kind
        self.misses = {"serving": 0, "bound": 0}  # lookups computed in this run
        self.loaded: set[Key] = set(self.rows)
        self.touched: set[Key] = set()
        self.read = len(self.rows)

    @staticmethod
    def key(model: tuple[str, str], context: int, concurrency: int, kv_cache_dtype: str, gpu: GPU, engine: str,
            fmt: str, tp: int, pp: int, nodes: int, native_support: bool) -> Key:
        return (model[0], model[1], context, concurrency, kv_cache_dtype, gpu.id, gpu_row_hash(gpu), engine, fmt,
                tp, pp, nodes, native_support)

    @staticmethod
    def read_table(con: Any, models: dict[str, str], gpus: dict[str, GPU]) -> Any:  # noqa: ANN401
        """The rows of the current sizing code for these models (id -> revision) and GPUs (current rows), as an
        Arrow table for :meth:`from_table`."""
        from pipeline.storage import revision_caches

        hashes = {g: gpu_row_hash(gpu) for g, gpu in gpus.items()}
        return revision_caches.valid_rows(con, "serving_cache", (*_KEY_COLUMNS, *_VALUES), serving_version(),
                                          models, hashes)

    @classmethod
    def from_table(cls, table: Any) -> ServingCache:  # noqa: ANN401 - a pyarrow Table
        n = len(_KEY_COLUMNS)
        columns = [c.to_pylist() for c in table.columns]
        rows = {}
        for r in zip(*columns, strict=True):
            bound = r[n + _BOUND]
            rows[r[:n]] = [r[n + _SERVED], serving_of(r[n + _SERVING]), None if bound is None else tuple(bound)]
        return cls(rows)  # type: ignore[arg-type]

    @staticmethod
    def prune(con: Any, models: dict[str, str], gpus: dict[str, GPU]) -> int:  # noqa: ANN401 - a connection
        """Drop the rows no longer valid (inside the caller's transaction); rows dropped."""
        from pipeline.storage import revision_caches

        return revision_caches.prune(con, "serving_cache", serving_version(), models,
                                     {g: gpu_row_hash(gpu) for g, gpu in gpus.items()})

    def serving(self, key: Key) -> tuple[bool, Serving | None]:
        """(known, the steady state or None when no request of the load fits)."""
        row = self.rows.get(key)
        if row is None or not row[_SERVED]:
            self.misses["serving"] += 1
            return False, None
        self.hits["serving"] += 1
        return True, row[_SERVING]

    def put_serving(self, key: Key, serving: Serving | None) -> None:
        row = self._row(key)
        row[_SERVED], row[_SERVING] = True, serving

    def bound(self, key: Key) -> tuple[str, ...] | None:
        """The lower bounds' shortfall, None when not computed."""
        row = self.rows.get(key)
        if row is None or row[_BOUND] is None:
            self.misses["bound"] += 1
            return None
        self.hits["bound"] += 1
        return row[_BOUND]

    def put_bound(self, key: Key, shortfall: tuple[str, ...]) -> None:
        self._row(key)[_BOUND] = shortfall

    def _row(self, key: Key) -> list[Any]:
        self.touched.add(key)
        row = self.rows.get(key)
        if row is None:
            row = self.rows[key] = [False, None, None]
        return row

    def delta(self) -> tuple[Any, Any] | None:
        """The rows to write, as Arrow tables: (keys of re-used rows this run completed, rows added or completed),
        or None when nothing changed (built in a worker process, written by the step's own)."""
        if not self.touched:
            return None
        completed = [k for k in self.touched if k in self.loaded]
        version = serving_version()
        rows = []
        for k in self.touched:
            served, serving, bound = self.rows[k]
            rows.append((*k, version, served, serving_text(serving), None if bound is None else list(bound)))
        self.loaded, self.touched = set(self.rows), set()
        return _arrow(completed, _KEY_COLUMNS), _arrow(rows, (*_KEY_COLUMNS, "sizing_version", *_VALUES))

    @staticmethod
    def write(con: Any, delta: tuple[Any, Any] | None) -> int:  # noqa: ANN401 - a connection
        """Write a :meth:`delta` (inside the caller's transaction); rows written."""
        from pipeline.storage import revision_caches

        return revision_caches.write_delta(con, "serving_cache", delta, _KEY_COLUMNS, tuple(_SCHEMA))
