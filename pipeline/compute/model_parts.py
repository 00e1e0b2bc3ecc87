"""One model's share of the out layer, computed alone: its sizing grid rows and its cheapest-setups rows (the
partitioned steps call these, one model per step; ``out__sizing`` and ``out__cheapest_setups`` compute
the same rows for every model in one step). Nothing here opens DuckDB: the offers come in as rows."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

import polars as pl

from pipeline.compute.grid import compute_grid, grid_version
from pipeline.compute.offer_groups import ON_DEMAND, SPOT_LIKE, OfferGroups
from pipeline.compute.placement_cache import gpu_row_hash
from pipeline.compute.setups_table import ROW_COLUMNS, model_setup_rows
from pipeline.compute.tracked import Tracked
from sizing_core.gpus import GPU


def gpu_hashes(gpus: dict[str, GPU]) -> dict[str, str]:
    """Each catalog row's hash, as ``core__gpus`` stores it in ``gpus.row_hash``."""
    return {g: gpu_row_hash(gpu) for g, gpu in gpus.items()}


def catalog_digest(hashes: dict[str, str]) -> str:
    """One fingerprint of the whole GPU catalog: a part sized against another catalog is stale."""
    return hashlib.sha256(repr(sorted(hashes.items())).encode()).hexdigest()[:16]


def sizing_rows(t: Tracked, gpus: dict[str, GPU]) -> pl.DataFrame:
    """The model's sizing grid on every catalog GPU, with what decides reuse (GPU row hash, sizing code), in the
    ``sizing`` table's shape."""
    assert t.arch is not None and t.revision is not None, f"{t.entry.id} cannot be sized: {t.error}"
    hashes = gpu_hashes(gpus)
    frame = compute_grid({t.entry.id: (t.revision, t.arch)}, list(gpus.values()))
    return frame.with_columns(gpu_row_hash=pl.col("gpu_id").replace_strict(hashes, default="?"),
                              sizing_version=pl.lit(grid_version()))


def setup_rows(t: Tracked, offers: list[dict[str, Any]], *, as_of: datetime, now: datetime) -> list[dict[str, Any]]:
    """The model's cheapest setups for every standard load, as ``out__cheapest_setups`` writes them (the same
    function: :func:`~pipeline.compute.setups_table.model_setup_rows`), without the one-process run's placement
    cache."""
    assert t.arch is not None, f"{t.entry.id} cannot be sized: {t.error}"
    on_demand, spot = OfferGroups(offers, ON_DEMAND), OfferGroups(offers, SPOT_LIKE)
    rows = model_setup_rows(t, on_demand, spot, None, as_of=as_of, now=now)
    return [dict(zip(ROW_COLUMNS, row, strict=True)) for row in rows]
