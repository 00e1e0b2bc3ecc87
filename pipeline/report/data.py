"""Read a published snapshot the way any consumer would: ``index.json``, ``models/*.json``, ``manifest.json`` and
the Parquet tables. Nothing here opens DuckDB's database file or imports the pipeline's internals."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.compute.price_days import day_summaries, joined
from pipeline.sources.base import REFERENCE, RENTABLE

#: allocation (as published) -> board column: the rentable classes, a marketplace's median with the marketplace, and
#: reference prices (a third party's record; history only, never a current offer) with the class they record;
#: anything else (monthly, bid statistics) is not an hourly price
PRICE_CLASS = {**{c: c for c in RENTABLE}, "marketplace_median": "marketplace", **REFERENCE}
CLASSES = RENTABLE
#: offer facts shown beside each provider's price: form factor, links, capacity at fetch time
MACHINE_FACTS = ("form_factor", "gpu_link", "cluster_fabric", "cluster_gbps", "availability_status")


@dataclass
class Snapshot:
    path: Path
    manifest: dict[str, Any]
    index: dict[str, Any]
    model_paths: tuple[Path, ...]  # the published model files, read one at a time (2,000 at once hold a GiB)
    offers: pl.DataFrame
    history: pl.DataFrame
    gpus: dict[str, dict[str, Any]] = field(default_factory=dict)
    native_formats: dict[str, str] = field(default_factory=dict)  # model id -> the checkpoint's stored format
    left_out: dict[str, dict[str, int]] = field(default_factory=dict)  # rows priced() leaves out, by reason


def priced(frame: pl.DataFrame) -> pl.DataFrame:
    """Eligible hourly prices with their board class: rows whose published ``eligible`` is true (the
    ``offers_judged`` view's verdict, sql/020; in the history, the verdict each observation got when judged). A NULL
    verdict means "not judged" and is never shown; so are rows a chart or the board cannot place: no GPU id, no
    provider, no time, or a price that is not a positive finite number (:func:`unplaceable` counts them)."""
    if frame.is_empty() or "eligible" not in frame.columns:
        return frame.head(0).with_columns(price_class=pl.lit(None, dtype=pl.String))
    out = frame.filter(pl.col("eligible").fill_null(False) & _placeable(frame))
    return out.with_columns(price_class=pl.col("allocation").replace_strict(PRICE_CLASS, default=None)) \
        .filter(pl.col("price_class").is_not_null())


def _placeable(frame: pl.DataFrame) -> pl.Expr:
    price = pl.col("price_per_gpu_hour_usd").cast(pl.Float64)
    ok = pl.col("gpu_id").is_not_null() & pl.col("provider").is_not_null() & price.is_finite() & (price > 0)
    return ok & pl.col("observed_at").is_not_null() if "observed_at" in frame.columns else ok


def unplaceable(frame: pl.DataFrame) -> dict[str, int]:
    """How many rows :func:`priced` leaves out and why: ``not_judged`` (NULL verdict), ``no_gpu``, ``no_provider``,
    ``no_time``, ``bad_price`` (missing, zero, negative, NaN or infinite); only reasons that occur."""
    if frame.is_empty():
        return {}
    price = pl.col("price_per_gpu_hour_usd").cast(pl.Float64)
    judged = pl.col("eligible").is_null() if "eligible" in frame.columns else pl.col("offer_key").is_not_null()
    checks = {"not_judged": judged,
              "no_gpu": pl.col("gpu_id").is_null(), "no_provider": pl.col("provider").is_null(),
              "no_time": pl.col("observed_at").is_null() if "observed_at" in frame.columns else pl.lit(False),
              "bad_price": ~(price.is_finite() & (price > 0)).fill_null(False)}
    counts = frame.select(**{k: v.sum() for k, v in checks.items()}).row(0, named=True)
    return {k: int(v) for k, v in counts.items() if v}


def left_out_rows(path: Path) -> dict[str, dict[str, int]]:
    """Per published table, the rows of a snapshot folder the board and charts leave out, by reason (written into
    the manifest and the run summary): current offers the verdict does not exclude, and every history row."""
    offers = pl.read_parquet(path / "offers_current.parquet")
    obs_files = sorted((path / "price_observations").glob("*/*.parquet"))
    history = (pl.concat([pl.read_parquet(f, hive_partitioning=False) for f in obs_files], how="diagonal_relaxed")
               if obs_files else offers.head(0))
    return _left_out(offers, history)


def _left_out(offers: pl.DataFrame, history: pl.DataFrame) -> dict[str, dict[str, int]]:
    claimed = offers.filter(pl.col("eligible").fill_null(True)) if "eligible" in offers.columns else offers.head(0)
    out = {"offers_current": unplaceable(claimed), "price_observations": unplaceable(history)}
    return {k: v for k, v in out.items() if v}


def load_snapshot(path: Path, manifest: dict[str, Any] | None = None) -> Snapshot:
    """``manifest``: the snapshot's manifest when the report is rendered before it is written (at publish time)."""
    manifest = manifest if manifest is not None else json.loads((path / "manifest.json").read_text())
    index = json.loads((path / "index.json").read_text())
    model_paths = tuple(path / m["path"] for m in index["models"] if m.get("status") == "ok")
    offers = pl.read_parquet(path / "offers_current.parquet")
    obs_files = sorted((path / "price_observations").glob("*/*.parquet"))
    # parts written before schema 3 lack the quality columns: read each, align by name (missing = null)
    history = (pl.concat([pl.read_parquet(f, hive_partitioning=False) for f in obs_files], how="diagonal_relaxed")
               if obs_files else offers.head(0))
    gpus = {r["id"]: r for r in pl.read_parquet(path / "gpus.parquet").to_dicts()}
    native = (pl.scan_parquet(path / "sizing.parquet").filter(pl.col("format") == "native")
              .select("model_id", "stored_format").unique("model_id").collect())
    return Snapshot(path=path, manifest=manifest, index=index, model_paths=model_paths, offers=priced(offers),
                    history=priced(history), gpus=gpus,
                    native_formats=dict(zip(native["model_id"], native["stored_format"], strict=True)),
                    left_out=_left_out(offers, history))


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


def one_gpu_offers(snap: Snapshot) -> dict[str, dict[str, Any]]:
    """Per GPU the cheapest on-demand instance of exactly one GPU on the board's offers: what a one-GPU deployment
    rents (an instance of eight at a lower $/GPU-hour is not a price for one)."""
    offers = snap.offers
    if offers.is_empty():
        return {}
    one = (offers.filter((pl.col("price_class") == "on_demand") & (pl.col("gpu_count") == 1))
           .sort(["price_per_hour_usd", "provider", "instance_type"])
           .group_by("gpu_id", maintain_order=True).first())
    return {r["gpu_id"]: r for r in one.to_dicts()}


def _first_flag(frame: pl.DataFrame, name: str) -> pl.Expr:
    return (pl.col(name).first() if name in frame.columns else pl.lit(False)).alias(name)


def _gpu_sort(snap: Snapshot, gpu_id: str) -> tuple:
    gpu = snap.gpus.get(gpu_id, {})
    return (-(gpu.get("memory_gb") or 0), str(gpu.get("name", gpu_id)))


def price_history(snap: Snapshot) -> dict[str, dict[str, Any]]:
    """Per GPU, per UTC day (``pipeline/exports/price_history.py``'s rule: eligible whole-GPU offers): the cheapest
    on-demand $/GPU-hour across providers with its provider, the highest of the providers' cheapest (the spread),
    the cheapest spot/marketplace price of the day (the minimum over every spot and marketplace price, any
    provider), and each provider's own cheapest (drawn on demand). Days come in date order with the providers each
    has (:func:`pipeline.compute.price_days.day_summaries`); a line joins two days only when they are consecutive
    days of the history (no observed day between them without a price for the GPU) with the same provider set, so
    a gap stays a gap and a change of providers is a marked new start, not a price move (``None`` points break
    the line; each provider's own line breaks at its gaps too). ``days``: the same per day as rows for the table
    under the chart."""
    hist = snap.history
    if hist.is_empty():
        return {}
    hist = hist.with_columns(day=pl.col("observed_at").dt.convert_time_zone("UTC").dt.date().cast(pl.String))
    observed = hist["day"].unique().to_list()
    per_provider = (hist.with_columns(line=pl.when(pl.col("price_class") == "on_demand").then(pl.lit("on_demand"))
                                      .otherwise(pl.lit("spot")))
                    .group_by(["gpu_id", "line", "day", "provider"])
                    .agg(pl.col("price_per_gpu_hour_usd").min().round(4).alias("price"))
                    .sort(["gpu_id", "line", "day", "price", "provider"]))
    out: dict[str, dict[str, Any]] = {}
    for (gpu_id,), part in per_provider.group_by(["gpu_id"], maintain_order=True):
        od = part.filter(pl.col("line") == "on_demand")
        days = joined(day_summaries(od.to_dicts()), observed)
        spot_days = joined(day_summaries(part.filter(pl.col("line") == "spot").to_dicts()), observed)
        spot_by_day = {d["day"]: d for d in spot_days}
        od_by_day = {d["day"]: d for d in days}
        out[gpu_id] = {
            "cheapest": _line(days, "cheapest", with_providers=True),
            "high": _line(days, "highest"),
            "spot": _line(spot_days, "cheapest", with_providers=True),
            "providers": [{"provider": prov, "points": _line(joined(day_summaries(pp.to_dicts()), observed), "cheapest")}
                          for (prov,), pp in od.sort(["provider", "day"]).group_by(["provider"], maintain_order=True)],
            "days": [{"day": day, "on_demand": od_by_day.get(day), "spot": spot_by_day.get(day)}
                     for day in sorted(set(od_by_day) | set(spot_by_day))],
            "points": part.height}
    return out


def _line(days: list[dict[str, Any]], key: str, with_providers: bool = False) -> list[dict[str, Any]]:
    """Chart.js points of one series in date order; a ``{x, y: None}`` point (halfway) before each day a line must
    not join to the one before (:func:`pipeline.compute.price_days.joined`)."""
    points: list[dict[str, Any]] = []
    for i, d in enumerate(days):
        x = _day_ms(d["day"])
        if i and not d["joined"]:
            points.append({"x": (points[-1]["x"] + x) / 2, "y": None})
        point: dict[str, Any] = {"x": x, "y": d[key]}
        if with_providers:
            point |= {"provider": d["provider"], "providers": d["providers"], "changed": d["changed"],
                      "added": d["added"], "removed": d["removed"], "gap": d["gap"]}
        points.append(point)
    return points


def _day_ms(day: Any) -> int:  # noqa: ANN401 - a date or an ISO day
    if isinstance(day, str):
        day = date.fromisoformat(day)
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)


def _ms(t: datetime) -> float:
    return t.timestamp() * 1000
