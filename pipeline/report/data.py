"""Read a published snapshot the way any consumer would: ``index.json``, ``models/*.json``, ``manifest.json`` and
the Parquet tables. Nothing here opens DuckDB's database file or imports the pipeline's internals."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

#: allocation (as published) -> board column; anything else (e.g. monthly) is not an hourly price
PRICE_CLASS = {"on_demand": "on_demand", "spot": "spot", "interruptible": "spot", "preemptible": "spot",
               "marketplace": "marketplace", "marketplace_median": "marketplace"}
CLASSES = ("on_demand", "spot", "marketplace")
#: offer facts shown beside each provider's price (issue #24): form factor, links, capacity at fetch time
MACHINE_FACTS = ("form_factor", "gpu_link", "cluster_fabric", "cluster_gbps", "availability_status")


@dataclass
class Snapshot:
    path: Path
    manifest: dict[str, Any]
    index: dict[str, Any]
    models: list[dict[str, Any]]
    offers: pl.DataFrame
    history: pl.DataFrame
    gpus: dict[str, dict[str, Any]] = field(default_factory=dict)
    native_formats: dict[str, str] = field(default_factory=dict)  # model id -> the checkpoint's stored format


def priced(frame: pl.DataFrame) -> pl.DataFrame:
    """Eligible hourly prices (the published ``eligible`` column: the ``offers_judged`` view's verdict, sql/020; in
    the history, the verdict each observation got when it was current), with their board class. Rows without a
    verdict (history observed before issue #24) are left out: they may be quarantined placeholders."""
    if frame.is_empty() or "eligible" not in frame.columns:
        return frame.head(0).with_columns(price_class=pl.lit(None, dtype=pl.String))
    out = frame.filter(pl.col("eligible").fill_null(False))
    return out.with_columns(price_class=pl.col("allocation").replace_strict(PRICE_CLASS, default=None)) \
        .filter(pl.col("price_class").is_not_null())


def load_snapshot(path: Path, manifest: dict[str, Any] | None = None) -> Snapshot:
    """``manifest``: the snapshot's manifest when the report is rendered before it is written (at publish time)."""
    manifest = manifest if manifest is not None else json.loads((path / "manifest.json").read_text())
    index = json.loads((path / "index.json").read_text())
    models = [json.loads((path / m["path"]).read_text()) for m in index["models"] if m.get("status") == "ok"]
    offers = pl.read_parquet(path / "offers_current.parquet")
    obs_files = sorted((path / "price_observations").glob("*/*.parquet"))
    # parts written before schema 3 lack the quality columns: read each, align by name (missing = null)
    history = (pl.concat([pl.read_parquet(f, hive_partitioning=False) for f in obs_files], how="diagonal_relaxed")
               if obs_files else offers.head(0))
    gpus = {r["id"]: r for r in pl.read_parquet(path / "gpus.parquet").to_dicts()}
    native = (pl.scan_parquet(path / "sizing.parquet").filter(pl.col("format") == "native")
              .select("model_id", "stored_format").unique("model_id").collect())
    return Snapshot(path=path, manifest=manifest, index=index, models=models, offers=priced(offers),
                    history=priced(history), gpus=gpus,
                    native_formats=dict(zip(native["model_id"], native["stored_format"], strict=True)))


def board(snap: Snapshot) -> list[dict[str, Any]]:
    """Per GPU: the cheapest price per class (with provider and verification time) and the same per provider."""
    offers = snap.offers
    if offers.is_empty():
        return []
    best = (offers.sort("price_per_gpu_hour_usd")
            .group_by(["gpu_id", "provider", "price_class"], maintain_order=True)
            .agg(pl.col("price_per_gpu_hour_usd").first().alias("price"),
                 pl.col("instance_type").first().alias("instance_type"),
                 pl.col("verified_at").first().alias("verified_at"), _first_flag(offers, "stale"),
                 *[pl.col(c).first().alias(c) for c in MACHINE_FACTS if c in offers.columns]))
    rows = []
    for gpu_id in sorted(best["gpu_id"].unique().to_list(), key=lambda g: _gpu_sort(snap, g)):
        per = best.filter(pl.col("gpu_id") == gpu_id)
        providers = []
        for provider in sorted(per["provider"].unique().to_list()):
            cells = {r["price_class"]: r for r in per.filter(pl.col("provider") == provider).to_dicts()}
            providers.append({"provider": provider, **{c: cells.get(c) for c in CLASSES}})
        cheapest = {}
        for c in CLASSES:
            of_class = per.filter(pl.col("price_class") == c).sort("price")
            cheapest[c] = of_class.row(0, named=True) if of_class.height else None
        gpu = snap.gpus.get(gpu_id, {})
        rows.append({"gpu": gpu_id, "name": gpu.get("name", gpu_id), "memory_gb": gpu.get("memory_gb"),
                     "cheapest": cheapest, "providers": providers})
    return rows


def _first_flag(frame: pl.DataFrame, name: str) -> pl.Expr:
    return (pl.col(name).first() if name in frame.columns else pl.lit(False)).alias(name)


def _gpu_sort(snap: Snapshot, gpu_id: str) -> tuple:
    gpu = snap.gpus.get(gpu_id, {})
    return (-(gpu.get("memory_gb") or 0), str(gpu.get("name", gpu_id)))


def price_history(snap: Snapshot) -> dict[str, list[dict[str, Any]]]:
    """Per GPU, one series per (provider, class): the cheapest $/GPU-hour at each observation time."""
    hist = snap.history
    if hist.is_empty():
        return {}
    points = (hist.group_by(["gpu_id", "provider", "price_class", "observed_at"])
              .agg(pl.col("price_per_gpu_hour_usd").min().alias("price"))
              .sort(["gpu_id", "provider", "price_class", "observed_at"]))
    out: dict[str, list[dict[str, Any]]] = {}
    for (gpu_id, provider, cls), part in points.group_by(["gpu_id", "provider", "price_class"], maintain_order=True):
        out.setdefault(gpu_id, []).append({
            "provider": provider, "class": cls,
            "points": [{"x": int(_ms(t)), "y": round(p, 4)} for t, p in zip(part["observed_at"], part["price"],
                                                                              strict=True)]})
    return out


def _ms(t: datetime) -> float:
    return t.timestamp() * 1000
