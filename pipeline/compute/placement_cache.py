"""What the cheapest-setups planner learnt, kept across runs in DuckDB (``sql/008_placement_cache.sql``).

A placement (fewest GPUs and the TP x PP plan of a model in a format on one GPU kind and instance shape), the
weights-only GPU floor the pruning prices groups at, and the decode rates of a placement do not depend on prices.
An hourly run in which only offers moved therefore re-uses them: its setups cost the ranking and the writes.
A row is used only while everything it was computed from is unchanged: the model's revision (Hub sha or spec
hash), the GPU's catalog row (hash of the whole row, as ``gpus.row_hash``), the scenario (context, concurrency,
KV cache dtype) and the sizing code itself (:func:`sizing_version`, a hash of ``sizing_core`` and the planner).
Everything else is dropped when the table is rewritten."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from sizing_core.gpus import GPU

#: the code a cached row depends on: the sizing library (its data files are keyed separately: GPU rows by hash,
#: model specs by revision; the calibration's bands are a generated module; the format rules, the family table and
#: the config-class fields are data read as code, so every top-level JSON file of ``sizing_core/data`` counts
#: here), the column face of its rules, the planner that shapes GPUs into instances, the rates it caches and the
#: per-token bounds of its search
_CODE = [Path(__file__).resolve().parents[2] / "sizing_core", Path(__file__).resolve().parent / "setups.py",
         Path(__file__).resolve().parent / "setup_costs.py", Path(__file__).resolve().parent / "rates.py",
         Path(__file__).resolve().parent / "serving.py", Path(__file__).resolve().parent / "columns.py",
         *sorted((Path(__file__).resolve().parents[2] / "sizing_core" / "data").glob("*.json"))]


@lru_cache(maxsize=1)
def sizing_version() -> str:
    digest = hashlib.sha256()
    for root in _CODE:
        for path in sorted(root.rglob("*.py")) if root.is_dir() else [root]:  # sub-packages too (sizing_core/layers/)
            digest.update(str(path.relative_to(root) if root.is_dir() else path.name).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


_HASHES: dict[int, tuple[GPU, str]] = {}


def gpu_row_hash(gpu: GPU) -> str:
    """The catalog row's hash, computed as ``core__gpus`` stores it in ``gpus.row_hash`` (memoised by object
    identity, the object kept so an id is never reused while cached)."""
    hit = _HASHES.get(id(gpu))
    if hit is None or hit[0] is not gpu:
        if len(_HASHES) > 4096:
            _HASHES.clear()
        hit = _HASHES[id(gpu)] = (gpu, hashlib.sha256(gpu.model_dump_json().encode()).hexdigest()[:16])
    return hit[1]


@dataclass(frozen=True)
class Placed:
    """What a setup needs of a placement: GPUs needed (None: no deployment), the plan, and the format's support."""

    gpus: int | None
    tensor_parallel: int | None
    pipeline_parallel: int | None
    native_support: bool
    support_note: str


@dataclass(frozen=True)
class Rates:
    """Decode rates of a placement: one request, ``batch`` requests at once, and the placement's own load (its
    concurrency) at once (unrounded)."""

    decode_tokens_per_s: float | None
    batch: int
    aggregate_tokens_per_s: float | None
    load_tokens_per_s: float | None = None  # all requests of the planned load together


#: (model_id, revision, format, context, concurrency, kv dtype, gpu_id, gpu row hash, GPUs per instance)
Key = tuple[str, str, str, int, int, str, str, str, int]
_KEY_COLUMNS = ("model_id", "revision", "format", "context", "concurrency", "kv_cache_dtype", "gpu_id", "gpu_row_hash",
                "gpus_per_instance")
#: column -> its type (by name: Arrow types are built only when the cache is written, so `vramlab fit` does not
#: import pyarrow)
_SCHEMA = {"model_id": "String", "revision": "String", "format": "String", "context": "Int32",
           "concurrency": "Int32", "kv_cache_dtype": "String", "gpu_id": "String", "gpu_row_hash": "String",
           "gpus_per_instance": "Int32", "sizing_version": "String", "gpus_floor": "Int32", "gpus": "Int32",
           "tensor_parallel": "Int32", "pipeline_parallel": "Int32", "native_support": "Boolean",
           "support_note": "String", "rates_known": "Boolean", "decode_tokens_per_s": "Float64",
           "max_concurrent_requests": "Int32", "aggregate_tokens_per_s": "Float64", "load_tokens_per_s": "Float64"}


def _arrow(rows: list[tuple[Any, ...]], columns: tuple[str, ...]) -> Any:
    """Rows (tuples in ``columns`` order) as an Arrow table typed by :data:`_SCHEMA` (pyarrow imported here: `vramlab
    fit` imports this module and never writes the cache)."""
    import pyarrow as pa

    from pipeline.storage.loaders import arrow_rows

    types = {"String": pa.string(), "Int32": pa.int32(), "Float64": pa.float64(), "Boolean": pa.bool_()}
    return arrow_rows(rows, pa.schema([(c, types[_SCHEMA[c]]) for c in columns]))


#: the value columns of a row, in the order a cached row (a list) holds them
_VALUES = ("gpus_floor", "gpus", "tensor_parallel", "pipeline_parallel", "native_support", "support_note",
           "rates_known", "decode_tokens_per_s", "max_concurrent_requests", "aggregate_tokens_per_s",
           "load_tokens_per_s")
_FLOOR, _GPUS, _TP, _PP, _NATIVE, _NOTE, _RATES_KNOWN, _DECODE, _BATCH, _AGGREGATE, _LOAD = range(len(_VALUES))
assert set(_VALUES) == set(_SCHEMA) - set(_KEY_COLUMNS) - {"sizing_version"}


class PlacementCache:
    """Rows of ``placement_cache`` still valid for this run (for some models), plus what this run computes;
    :meth:`delta` and :meth:`write` write the rows this run added or completed (a run that only re-used rows writes
    nothing). A row is held as a list of its :data:`_VALUES` under its key (a dict per row made the 1.9 M rows
    of 2,000 models ~3x larger and slower to read)."""

    def __init__(self, rows: dict[Key, list[Any]] | None = None):
        self.rows: dict[Key, list[Any]] = rows or {}
        self.hits = {"floor": 0, "placement": 0, "rates": 0}  # lookups answered from the table, per kind
        self.misses = {"floor": 0, "placement": 0, "rates": 0}  # lookups computed in this run
        self.dirty = False
        self.loaded: set[Key] = set(self.rows)  # keys read from the table
        self.touched: set[Key] = set()  # keys this run added or completed
        self.read = 0  # valid rows read from the table
        self.computed_models: set[str] = set()  # models and GPUs with anything planned in this run
        self.computed_gpus: set[str] = set()

    @staticmethod
    def read_table(con: Any, models: dict[str, str], gpus: dict[str, GPU]) -> Any:
        """The rows of the current sizing code for these models (id -> revision) and GPUs (current rows), as an
        Arrow table for :meth:`from_table` (a worker process builds the cache from it): only these models'
        rows are read (a run reads the table a chunk of models at a time). Rows of other code, revisions or GPU
        rows are dropped by :meth:`prune`, once per run, before."""
        from pipeline.storage import revision_caches

        hashes = {g: gpu_row_hash(gpu) for g, gpu in gpus.items()}
        return revision_caches.valid_rows(con, "placement_cache", (*_KEY_COLUMNS, *_VALUES), sizing_version(),
                                          models, hashes)

    @classmethod
    def from_table(cls, table: Any) -> PlacementCache:
        """The cache of :meth:`read_table`'s rows (pyarrow only: polars' thread pool is not safe in a forked
        worker, Arrow's is)."""
        n = len(_KEY_COLUMNS)  # a row keeps its values only, as a list: the key holds the rest
        columns = [c.to_pylist() for c in table.columns]
        cache = cls({r[:n]: list(r[n:]) for r in zip(*columns, strict=True)})  # type: ignore[misc]
        cache.read = len(cache.rows)
        return cache

    @staticmethod
    def prune(con: Any, models: dict[str, str], gpus: dict[str, GPU]) -> int:
        """Drop the rows no longer valid: other sizing code, another revision of a model or no longer tracked,
        another GPU catalog row (inside the caller's transaction); rows dropped."""
        from pipeline.storage import revision_caches

        return revision_caches.prune(con, "placement_cache", sizing_version(), models,
                                     {g: gpu_row_hash(gpu) for g, gpu in gpus.items()})

    def delta(self) -> tuple[Any, Any] | None:
        """The rows to write, as Arrow tables: (keys of re-used rows this run completed, rows added or completed),
        or None when nothing changed; the cache then counts as saved. A worker process computes it and the step's
        own process writes it (:meth:`write`; Arrow, not polars: polars' thread pool is not fork-safe)."""
        if not self.dirty:
            return None
        completed = [k for k in self.touched if k in self.loaded]  # re-used rows this run added rates to
        version = sizing_version()
        rows = [(*k, *self.rows[k], version) for k in self.touched]
        self.dirty = False
        self.loaded, self.touched = set(self.rows), set()
        return _arrow(completed, _KEY_COLUMNS), _arrow(rows, (*_KEY_COLUMNS, *_VALUES, "sizing_version"))

    @staticmethod
    def write(con: Any, delta: tuple[Any, Any] | None) -> int:
        """Write a :meth:`delta` (inside the caller's transaction); rows written."""
        from pipeline.storage import revision_caches

        return revision_caches.write_delta(con, "placement_cache", delta, _KEY_COLUMNS, tuple(_SCHEMA))

    def _get(self, key: Key, column: int, kind: str) -> list[Any] | None:
        row = self.rows.get(key)
        if row is None or row[column] is None:
            self.misses[kind] += 1
            return None
        self.hits[kind] += 1
        return row

    def _row(self, key: Key) -> list[Any]:
        self.dirty = True
        self.touched.add(key)
        self.computed_models.add(key[0])
        self.computed_gpus.add(key[6])
        row = self.rows.get(key)
        if row is None:
            row = self.rows[key] = [None] * len(_VALUES)
            row[_RATES_KNOWN] = False
        return row

    def known_floor(self, key: Key) -> int | None:
        """The floor when a row holds it, else None; counted neither as a hit nor a miss (a peek)."""
        row = self.rows.get(key)
        return None if row is None else row[_FLOOR]

    def floor(self, key: Key) -> int | None:
        row = self._get(key, _FLOOR, "floor")
        return None if row is None else row[_FLOOR]

    def put_floor(self, key: Key, floor: int) -> None:
        self._row(key)[_FLOOR] = floor

    def placed(self, key: Key) -> Placed | None:
        row = self._get(key, _NATIVE, "placement")  # set on every placement row, fitting or not
        if row is None:
            return None
        return Placed(row[_GPUS], row[_TP], row[_PP], row[_NATIVE], row[_NOTE])

    def put_placed(self, key: Key, placed: Placed) -> None:
        row = self._row(key)
        row[_GPUS], row[_TP], row[_PP] = placed.gpus, placed.tensor_parallel, placed.pipeline_parallel
        row[_NATIVE], row[_NOTE] = placed.native_support, placed.support_note

    def rates(self, key: Key) -> Rates | None:
        row = self.rows.get(key)
        if row is None or not row[_RATES_KNOWN]:
            self.misses["rates"] += 1
            return None
        self.hits["rates"] += 1
        return Rates(row[_DECODE], row[_BATCH], row[_AGGREGATE], row[_LOAD])

    def put_rates(self, key: Key, rates: Rates) -> None:
        row = self._row(key)
        row[_RATES_KNOWN], row[_DECODE], row[_BATCH] = True, rates.decode_tokens_per_s, rates.batch
        row[_AGGREGATE], row[_LOAD] = rates.aggregate_tokens_per_s, rates.load_tokens_per_s
