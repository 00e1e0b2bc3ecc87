"""``vramlab cheapest``: the cheapest setups serving a load (``--concurrency`` requests of ``--context`` tokens) for
any model, from the latest snapshot's offers.

A tracked model asked the question the snapshot published (a standard load, no filter) is read from
``cheapest_setups.parquet``, so the CLI and the model JSON give the same rows; any other model or question re-runs
the same planner (``pipeline/compute/setups.py``) on the snapshot's offers, sizing the model on the fly. Rows are
distinct setups: one per provider x instance type x price, the regions offering it in one cell (``--by-region``:
a row per region, as before #23).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pipeline.cli.resolve import ResolveError, did_you_mean, norm, resolve_format

#: what `cheapest` answered before it took a load: the question cheapestSetups publishes
PUBLISHED_CONTEXT = 8192
SORTS = {"price": "price", "per-token": "per_token", "per_token": "per_token", "pertoken": "per_token"}


class _Error(ResolveError):
    pass


def _index_entry(snapshot: Path, model_id: str | None, repo: str | None) -> dict[str, Any] | None:
    """The snapshot's index entry of a resolved model (by id or Hub repo), or None: not published there."""
    index = json.loads((snapshot / "index.json").read_text())
    keys = {norm(k) for k in (model_id, repo) if k}
    return next((m for m in index["models"] if m.get("status", "ok") == "ok"
                 and keys & {norm(m["id"]), norm(m.get("repo") or "")}), None)


def setup_row(s: Any) -> dict[str, Any]:  # noqa: ANN401 - a Setup
    """snake_case keys (the CLI's contract since #1) and the camelCase keys the model JSON uses for the same setup,
    so one parser reads both."""
    snake = s.model_dump(mode="json", by_alias=False) | {"gpu_id": s.gpu}
    camel = s.model_dump(mode="json", by_alias=True)
    return camel | snake | {"gpuId": s.gpu, "nodes": s.instances}


def sort_of(text: str) -> str:
    key = text.strip().lower()
    if key not in SORTS:
        raise _Error(f"unknown --sort {text!r}: use price or per-token")
    return SORTS[key]


def _published(snap: Any, model_id: str, list_name: str, context: int, concurrency: int,  # noqa: ANN401
               sort: str) -> list[Any] | None:
    """The snapshot's own rows for this question, or None when it does not publish it. A snapshot publishes the
    on-demand lists of the loads its model file names (``cheapestSetupsByLoad``), by price and by cost per token,
    and the spot list of 8K x 1 by price; one from before #23 only the 8K x 1 lists by price."""
    import polars as pl

    from pipeline.compute.answers import setup_from_row

    model_file = snap.path / "models" / f"{model_id}.json"
    loads = json.loads(model_file.read_text()).get("cheapestSetupsByLoad") if model_file.is_file() else None
    published = {(PUBLISHED_CONTEXT, 1, "price")} | (
        {(a["context"], a["concurrency"], s) for a in loads or [] for s in ("price", "per_token")}
        if list_name == "on_demand" else set())
    if (context, concurrency, sort) not in published:
        return None
    frame = pl.read_parquet(snap.path / "cheapest_setups.parquet").filter(
        (pl.col("model_id") == model_id) & (pl.col("list") == list_name))
    if "context" in frame.columns:
        frame = frame.filter((pl.col("context").fill_null(PUBLISHED_CONTEXT) == context)
                             & (pl.col("concurrency").fill_null(1) == concurrency)
                             & (pl.col("sort").fill_null("price") == sort))
    return [setup_from_row(r) for r in frame.to_dicts()]


def cheapest_result(args: argparse.Namespace, data_dir: Path) -> dict[str, Any]:
    from pipeline.compute.answers import FIDELITY, overall, rank_value
    from pipeline.compute.setups import ON_DEMAND, SPOT_LIKE, OfferGroups, Planner, cheapest_setups
    from pipeline.exports.snapshot_offers import current_offers, latest_snapshot, providers

    snap = latest_snapshot(data_dir)
    if snap is None:
        raise _Error("no published snapshot yet: run `vramlab run` first")
    from pipeline.cli.resolve import family_note, gpu_family, resolve_model, split_count

    ref = resolve_model(args.model, data_dir)
    entry = _index_entry(snap.path, ref.id if ref.kind in ("watchlist", "hub") else None, ref.repo)
    model_id = entry["id"] if entry else ref.id
    fmt = resolve_format(args.format) if args.format else None
    sort = sort_of(args.sort)
    engine = None
    if args.engine:
        from sizing_core.engines import get_engine

        engine = get_engine(args.engine).id  # unknown: one line naming the engines
    family, count, note = None, None, None
    if args.gpu:
        name, count = split_count(args.gpu)
        family = gpu_family(name)
        note = family_note(name, family)
    if args.provider:
        known = providers(snap)
        if args.provider.lower() not in (p.lower() for p in known):
            raise _Error(f"no provider {args.provider!r} in snapshot {snap.id}{did_you_mean(args.provider, known)}")
    allocations = SPOT_LIKE if args.spot else ON_DEMAND
    list_name = "spot" if args.spot else "on_demand"
    filtered = bool(args.provider or args.region or args.max_price or args.single_machine or family or engine
                    or args.by_region)
    setups = None
    per_format = fmt is None or (args.context, args.concurrency, sort) == (PUBLISHED_CONTEXT, 1, "price")
    if entry is not None and not filtered and per_format:  # a question the snapshot published: read it
        setups = _published(snap, entry["id"], list_name, args.context, args.concurrency, sort)
    origin = "published"
    if setups is None:  # another question or model: the same planner on the snapshot's offers
        from pipeline.cli.models import load_ref

        arch = load_ref(ref)
        offers = current_offers(snap, provider=args.provider, region=args.region, spot=args.spot, gpus=family,
                                count=count)
        grouped = OfferGroups(offers, allocations)
        whole = bool(args.single_machine or args.max_price)  # filtered after the search: rank every setup
        formats = (fmt,) if fmt else FIDELITY  # several: the most faithful per configuration, in one search
        planners = {f: Planner(arch, f, args.context, args.concurrency, "bf16", engine=engine) for f in formats}
        setups = cheapest_setups(arch, formats, grouped, context=args.context, concurrency=args.concurrency,
                                 top=10_000 if whole else args.top, allocations=allocations, planner=planners,
                                 sort=sort, by_region=args.by_region)
        origin = "planned from the snapshot's offers"
    if args.single_machine:
        setups = [s for s in setups if s.instances == 1]
    if args.max_price:
        setups = [s for s in setups if s.price_per_hour <= args.max_price]
    if fmt:
        chosen = sorted((s for s in setups if s.format == fmt and (sort == "price" or
                                                                   s.usd_per_million_tokens_at_load is not None)),
                        key=lambda s: (rank_value(s, sort), s.rank_key))[: args.top]
    else:  # the most faithful format per rented configuration, 4-bit and above
        chosen = overall(setups, top=args.top, sort=sort, by_region=args.by_region)
    if not chosen:
        raise _Error(nothing_matches(args, model_id, fmt, snap.id, list_name))
    return {"model": model_id, "repo": ref.repo or (entry or {}).get("repo"), "snapshot": snap.id,
            "context": args.context, "concurrency": args.concurrency, "sort": sort, "list": list_name, "format": fmt,
            "origin": origin, "modelSource": ref.origin, "gpuNote": note,
            "filters": {"provider": args.provider, "region": args.region, "maxPrice": args.max_price,
                        "singleMachine": args.single_machine, "gpu": list(family) if family else None,
                        "gpuCount": count, "engine": engine, "byRegion": args.by_region},
            "setups": [setup_row(s) for s in chosen]}


def nothing_matches(args: argparse.Namespace, model_id: str, fmt: str | None, snapshot: str, list_name: str) -> str:
    """The one line ``cheapest`` prints when no setup answers: the question in words."""
    asked = [f"on {args.gpu}" if args.gpu else "",
             f"with {args.engine}" if args.engine else "", f"at {args.provider}" if args.provider else "",
             f"in regions {args.region}*" if args.region else "",
             f"at most ${args.max_price:g}/h" if args.max_price else "",
             "on one machine" if args.single_machine else ""]
    what = "spot/marketplace" if list_name == "spot" else "on-demand"
    return (f"no {what} setup of {model_id}{f' in {fmt}' if fmt else ''} for {args.concurrency} request(s) of "
            f"{args.context:,} tokens "
            f"{' '.join(a for a in asked if a)} in snapshot {snapshot}".replace("  ", " ").rstrip()
            + " (no offered GPU holds it that way; try fewer requests, a shorter context, another format or "
              "fewer filters)")
