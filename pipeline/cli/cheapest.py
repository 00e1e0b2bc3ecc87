"""``vramlab cheapest``: the published cheapest setups of a model, or the same planner re-run on the snapshot's
offers when the question differs from the published one (another context, filters, one machine only)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pipeline.cli.resolve import ResolveError, did_you_mean, norm, resolve_format

#: formats the pipeline publishes setups for (out__cheapest_setups)
PUBLISHED_CONTEXT = 8192


class _Error(ResolveError):
    pass


def _index_entry(snapshot: Path, model: str) -> dict[str, Any]:
    index = json.loads((snapshot / "index.json").read_text())
    key = norm(model)
    for m in index["models"]:
        if key in (norm(m["id"]), norm(m.get("repo") or ""), norm((m.get("repo") or "").split("/")[-1])):
            return m
    names = [m["id"] for m in index["models"]] + [m.get("repo") or "" for m in index["models"]]
    raise _Error(f"model {model!r} is not in snapshot {snapshot.name}{did_you_mean(model, names)}; "
                 "`vramlab models` lists the tracked models")


def setup_row(s: Any) -> dict[str, Any]:  # noqa: ANN401 - a Setup
    """snake_case keys (the CLI's contract since #1) and the camelCase keys the model JSON uses for the same setup,
    so one parser reads both."""
    snake = s.model_dump(mode="json", by_alias=False) | {"gpu_id": s.gpu}
    camel = s.model_dump(mode="json", by_alias=True)
    return camel | snake | {"gpuId": s.gpu, "nodes": s.instances}


def cheapest_result(args: argparse.Namespace, data_dir: Path) -> dict[str, Any]:
    from pipeline.compute.setups import (
        FIDELITY,
        ON_DEMAND,
        SPOT_LIKE,
        cheapest_setups,
        overall,
        setup_from_row,
    )
    from pipeline.exports.snapshot_offers import current_offers, latest_snapshot, providers

    snap = latest_snapshot(data_dir)
    if snap is None:
        raise _Error("no published snapshot yet: run `vramlab run` first")
    entry = _index_entry(snap.path, args.model)
    fmt = resolve_format(args.format) if args.format else None
    if args.provider:
        known = providers(snap)
        if args.provider.lower() not in (p.lower() for p in known):
            raise _Error(f"no provider {args.provider!r} in snapshot {snap.id}{did_you_mean(args.provider, known)}")
    allocations = SPOT_LIKE if args.spot else ON_DEMAND
    list_name = "spot" if args.spot else "on_demand"
    filtered = bool(args.provider or args.region or args.max_price or args.single_machine)
    if args.context == PUBLISHED_CONTEXT and not filtered:  # the published question: read what was published
        import polars as pl

        frame = pl.read_parquet(snap.path / "cheapest_setups.parquet").filter(
            (pl.col("model_id") == entry["id"]) & (pl.col("list") == list_name))
        setups = [setup_from_row(r) for r in frame.to_dicts()]
        origin = "published"
    else:  # another question: the same planner on the snapshot's offers
        from pipeline.cli.models import load_ref
        from pipeline.cli.resolve import resolve_model

        arch = load_ref(resolve_model(entry["id"], data_dir))
        offers = current_offers(snap, provider=args.provider, region=args.region, spot=args.spot)
        setups = [s for f in ([fmt] if fmt else FIDELITY)
                  for s in cheapest_setups(arch, f, offers, context=args.context, top=10_000 if filtered else
                                           args.top, allocations=allocations)]
        origin = "planned from the snapshot's offers"
    if args.single_machine:
        setups = [s for s in setups if s.instances == 1]
    if args.max_price:
        setups = [s for s in setups if s.price_per_hour <= args.max_price]
    if fmt:
        # the one rank order (multi-machine at 1.25x its price, total tie-break): never the raw price (issue #10)
        chosen = sorted((s for s in setups if s.format == fmt), key=lambda s: s.rank_key)[: args.top]
    else:  # the most faithful format per rented configuration, 4-bit and above
        chosen = overall(setups, top=args.top)
    if fmt and not chosen and not filtered:
        raise _Error(f"no {'spot' if args.spot else 'on-demand'} setup of {entry['id']} in {fmt} in snapshot "
                     f"{snap.id} (no offered GPU runs it at {args.context:,} tokens)")
    return {"model": entry["id"], "repo": entry.get("repo"), "snapshot": snap.id, "context": args.context,
            "list": list_name, "format": fmt, "origin": origin,
            "filters": {"provider": args.provider, "region": args.region, "maxPrice": args.max_price,
                        "singleMachine": args.single_machine},
            "setups": [setup_row(s) for s in chosen]}
