"""The price-independent part of each model file, kept across runs in DuckDB (``sql/009_export_cache.sql``).

Sizing a model for its file (the sizing report, the exact gpusNeeded plans, throughput, fine-tuning) is the
expensive part of publishing and depends only on the model and the code, so a run in which only prices moved
re-uses it. A row is used only while its key is unchanged: a hash of the watchlist entry, the revision, the Hub
facts (config, headers, files), every GPU catalog row, and the code that computes it (``sizing_core``, the
planner, ``pipeline/exports``, the Hub header reader)."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import polars as pl
from pydantic_core import to_jsonable_python

from pipeline.compute.placement_cache import gpu_row_hash, sizing_version
from pipeline.compute.tracked import Tracked
from pipeline.storage import export_cache
from sizing_core.gpus import catalog

_PIPELINE = Path(__file__).resolve().parents[1]


@lru_cache(maxsize=1)
def export_code_version() -> str:
    digest = hashlib.sha256(sizing_version().encode())
    for path in [*sorted((_PIPELINE / "exports").glob("*.py")), _PIPELINE / "ingest" / "models.py"]:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cache_key(t: Tracked) -> str:
    gpus = sorted((g, gpu_row_hash(gpu)) for g, gpu in catalog().items())
    parts = [t.entry.model_dump_json(), t.revision, t.hub.model_dump_json() if t.hub else None, gpus,
             export_code_version()]
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:32]


class StaticCache:
    """Valid rows loaded at the start of publishing; :meth:`save` writes the rows this run computed."""

    def __init__(self, rows: dict[str, tuple[str, str]]):
        self.rows = rows  # model_id -> (cache key, JSON payload)
        self.new: dict[str, tuple[str, dict[str, Any]]] = {}  # sized in this run
        self.reused: dict[str, tuple[str, dict[str, Any], int]] = {}  # (key, payload, launches when loaded)
        self.hits: list[str] = []

    @classmethod
    def load(cls, con: Any) -> StaticCache:
        return cls(export_cache.cached_payloads(con))

    def has(self, model_id: str, key: str) -> bool:
        """A valid row for the model is held (a peek: not counted as re-used)."""
        row = self.rows.get(model_id)
        return row is not None and row[0] == key

    def get(self, model_id: str, key: str) -> dict[str, Any] | None:
        row = self.rows.get(model_id)
        if row is None or row[0] != key:
            return None
        self.hits.append(model_id)
        payload = json.loads(row[1])
        self.reused[model_id] = (key, payload, len(payload.get("launches", {})))  # saved again if it grows
        return payload

    def grown(self) -> dict[str, tuple[str, dict[str, Any]]]:
        """Re-used rows to which assembling the files added a launch command (``model_json.best_setup_launch``)."""
        return {m: (k, p) for m, (k, p, n) in self.reused.items() if len(p.get("launches", {})) > n}

    def put(self, model_id: str, key: str, payload: dict[str, Any]) -> None:
        self.new[model_id] = (key, payload)

    def save(self, con: Any, keep: set[str]) -> int:
        """Write this run's rows (sized, or re-used with a launch added) and drop those of models no longer
        tracked; rows written."""
        stale = sorted(set(self.rows) - keep)
        rows = self.grown() | self.new
        if not rows and not stale:
            return 0
        now = datetime.now(UTC)
        export_cache.replace(con, stale, pl.DataFrame(
            {"model_id": list(rows), "cache_key": [key for key, _ in rows.values()],
             "payload": [json.dumps(to_jsonable_python(payload)) for _, payload in rows.values()],
             "computed_at": [now] * len(rows)},
            schema={"model_id": pl.String, "cache_key": pl.String, "payload": pl.String,
                    "computed_at": pl.Datetime("us", "UTC")}))
        return len(rows)
