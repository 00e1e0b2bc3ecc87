"""``vramlab cheapest``: the cheapest setups serving a load (``--concurrency`` requests of ``--context`` tokens) for
any model, from the latest snapshot's offers.

A tracked model asked the question the snapshot published (a standard load, no filter, at most the 5 rows of a
published list) is read from ``cheapest_setups.parquet``, so the CLI and the model JSON give the same rows; any
other model or question re-runs the same planner (``pipeline/compute/setups.py``) on the snapshot's offers, sizing
the model on the fly. Rows are
distinct setups: one per provider x instance type x price, the regions offering it in one cell (``--by-region``:
a row per region).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pipeline.cli.load import load_of
from pipeline.cli.resolve import ResolveError, did_you_mean, norm, resolve_format

#: candidates (setup x format) `cheapest` serves at most at a load, looking for ``--top`` meeting the level
SEARCH_LIMIT = 2000
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
    and the spot list of 8K x 1 by price; an older snapshot, only the 8K x 1 lists by price."""
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
    from pipeline.compute.answers import FIDELITY, TOP, overall, rank_value
    from pipeline.compute.service_setups import practical_setups
    from pipeline.compute.setups import ON_DEMAND, SPOT_LIKE, OfferGroups, Planner
    from pipeline.exports.snapshot_offers import current_offers, latest_snapshot, providers, regions

    args.allow_rpc = getattr(args, "allow_rpc", False)
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
    if args.region:
        named = regions(snap)
        if not any(r.lower().startswith(args.region.lower()) for r in named):
            raise _Error(f"no offer in a region starting {args.region!r} in snapshot {snap.id}"
                         f"{did_you_mean(args.region, named)} (`vramlab gpus GPU --offers` lists regions)")
    allocations = SPOT_LIKE if args.spot else ON_DEMAND
    list_name = "spot" if args.spot else "on_demand"
    fabric = fabric_of(args)
    filtered = bool(args.provider or args.region or args.max_price or args.single_machine or multi_machine(args)
                    or family or engine
                    or args.by_region or getattr(args, "allow_rpc", False) or args.max_gpus or args.available
                    or fabric)
    load = load_of(args, clients_default=1)
    if args.concurrency is None:  # no load, or a rate: the memory plan holds one request of --context
        args.concurrency = 1
    if load is not None:
        return _at_load(args, snap, ref, entry, model_id, fmt, sort, engine, (family, count, note), filtered, load)
    def choose(found: list[Any]) -> list[Any]:  # noqa: ANN401 - Setups
        if fmt:
            return sorted((s for s in found if s.format == fmt and (sort == "price" or
                                                                    s.usd_per_million_tokens_at_load is not None)),
                          key=lambda s: (not args.allow_rpc and s.deployment == "llama.cpp-rpc", rank_value(s, sort),
                                         s.rank_key))[: args.top]
        # the most faithful format per rented configuration, 4-bit and above
        return overall(found, top=args.top, sort=sort, by_region=args.by_region, allow_rpc=args.allow_rpc)

    setups = None
    per_format = fmt is None or (args.context, args.concurrency, sort) == (PUBLISHED_CONTEXT, 1, "price")
    if entry is not None and not filtered and per_format and args.top <= TOP:  # the snapshot's question: read it
        setups = _published(snap, entry["id"], list_name, args.context, args.concurrency, sort)
    origin = "published"
    if setups is None:  # another question or model: the same planner on the snapshot's offers
        from pipeline.cli.models import load_ref

        arch = load_ref(ref)
        offers = current_offers(snap, provider=args.provider, region=args.region, spot=args.spot, gpus=family,
                                count=count, max_count=args.max_gpus, available=args.available)
        grouped = OfferGroups(offers, allocations)
        whole = after_search(args)  # filtered after the search: rank every setup
        formats = (fmt,) if fmt else FIDELITY  # several: the most faithful per configuration, in one search
        planners = {f: Planner(arch, f, args.context, args.concurrency, "bf16", engine=engine) for f in formats}
        setups = practical_setups(arch, formats, grouped, context=args.context, concurrency=args.concurrency,
                                  top=10_000 if whole else args.top, allocations=allocations, planner=planners,
                                  sort=sort, by_region=args.by_region, allow_rpc=args.allow_rpc)
        origin = "planned from the snapshot's offers"
    chosen = choose(kept_setups(setups, args))
    if not chosen:
        raise _Error(nothing_matches(args, model_id, fmt, snap.id, list_name))
    return {"model": model_id, "repo": ref.repo or (entry or {}).get("repo"), "snapshot": snap.id,
            "context": args.context, "concurrency": args.concurrency, "sort": sort, "list": list_name, "format": fmt,
            "origin": origin, "modelSource": ref.origin, "gpuNote": note,
            "filters": filters_json(args, family, count, engine),
            "setups": [setup_row(s) for s in chosen]}


def filters_json(args: argparse.Namespace, family: tuple[str, ...] | None, count: int | None,
                 engine: str | None) -> dict[str, Any]:
    """``filters`` of ``cheapest --json`` (keys are added, never renamed)."""
    return {"provider": args.provider, "region": args.region, "maxPrice": args.max_price,
            "singleMachine": args.single_machine, "gpu": list(family) if family else None, "gpuCount": count,
            "engine": engine, "byRegion": args.by_region, "maxGpus": args.max_gpus, "available": args.available,
            "fabric": fabric_of(args), "multiMachine": multi_machine(args)}


def fabric_of(args: argparse.Namespace) -> str | None:
    """``--fabric`` as the part of a fabric's description to match (lower case; a setup's ``interconnect``), checked
    against the fabrics the instance-family table names (``pipeline/sources/data/interconnect.csv``); None when
    not asked."""
    asked = getattr(args, "fabric", None)
    if not asked:
        return None
    from pipeline.compute.fabric import fabric_names, interconnects

    key = asked.strip().lower()
    if not key or not any(key in fabric.lower() for _, _, fabric in interconnects()):
        names = list(fabric_names())
        raise _Error(f"unknown --fabric {asked!r}{did_you_mean(asked, names)} (fabrics: {', '.join(names)})")
    return key


def multi_machine(args: argparse.Namespace) -> bool:
    """``--multi-machine`` (a namespace built by another command may not carry it)."""
    return bool(getattr(args, "multi_machine", False))


def after_search(args: argparse.Namespace) -> bool:
    """Whether a filter applies to the setups found (:func:`kept_setups`), so the search must rank every setup."""
    return bool(args.single_machine or multi_machine(args) or args.max_price or args.max_gpus or fabric_of(args))


def kept_setups(setups: list[Any], args: argparse.Namespace) -> list[Any]:  # noqa: ANN401 - Setups
    """The setups the filters keep that only a whole setup can tell: one machine or several, the $/h cap, the GPUs
    rented, and the fabric a multi-machine setup runs over (an RPC chain has none)."""
    fabric, several = fabric_of(args), multi_machine(args)
    return [s for s in setups if not (args.single_machine and s.instances > 1)
            and not (several and s.instances < 2)
            and not (args.max_price and s.price_per_hour > args.max_price)
            and not (args.max_gpus and s.gpus > args.max_gpus)
            and not (fabric and s.nodes > 1 and fabric not in (s.interconnect or "").lower())]


def nothing_matches(args: argparse.Namespace, model_id: str, fmt: str | None, snapshot: str, list_name: str) -> str:
    """The one line ``cheapest`` prints when no setup answers: the question in words."""
    asked = [f"on {args.gpu}" if args.gpu else "",
             f"with {args.engine}" if args.engine else "", f"at {args.provider}" if args.provider else "",
             f"in regions {args.region}*" if args.region else "",
             f"at most ${args.max_price:g}/h" if args.max_price else "",
             "on one machine" if args.single_machine else "",
             ("across several machines" + (f" over {args.fabric}" if args.fabric else "")) if multi_machine(args)
             else "",
             f"on at most {args.max_gpus} GPU(s)" if args.max_gpus else "",
             "with stated capacity" if args.available else "",
             f"across machines only over {args.fabric}" if args.fabric and not multi_machine(args) else ""]
    what = "spot/marketplace" if list_name == "spot" else "on-demand"
    return (f"no {what} setup of {model_id}{f' in {fmt}' if fmt else ''} for {args.concurrency} request(s) of "
            f"{args.context:,} tokens "
            f"{' '.join(a for a in asked if a)} in snapshot {snapshot}".replace("  ", " ").rstrip()
            + " (no offered GPU holds it that way; try fewer requests, a shorter context, another format or "
              "fewer filters)")


def level_of(args: argparse.Namespace) -> tuple[Any, str]:  # noqa: ANN401 - a ServiceLevel or None
    """The service level asked (``--ttft-p90``, ``--min-tokens-per-s``), the default interactive floor without
    them, or none with ``--no-slo``; and where it came from."""
    from sizing_core.serving.service_level import DEFAULT_FLOOR, ServiceLevel

    if args.no_slo:
        if args.ttft_p90 or args.min_tokens_per_s:
            raise _Error("--no-slo drops the service level: give it or --ttft-p90/--min-tokens-per-s, not both")
        return None, "none"
    if args.ttft_p90 or args.min_tokens_per_s:
        return ServiceLevel(ttft_ms_p90=args.ttft_p90, min_tokens_per_s=args.min_tokens_per_s), "asked"
    return DEFAULT_FLOOR, "default"


def _published_candidates(snap: Any, model_id: str, load: Any, context: int, source: str) -> list[Any] | None:  # noqa: ANN401
    """The setups the snapshot published for a standard load whose standard workload this is, or None: another
    question. With the default floor its ``floor`` rows (the model JSON's ``atDefaultFloor``: the CLI and the JSON
    agree), without a level (``--no-slo``) its rows by price."""
    import polars as pl

    from pipeline.compute.answers import overall, setup_from_row
    from sizing_core.serving.service_level import standard_workload

    if source == "asked" or load.rate is not None or load != standard_workload(context, load.concurrency):
        return None
    if source == "none":  # the published list by price: the most faithful format per rented configuration
        found = _published(snap, model_id, "on_demand", context, load.concurrency, "price")
        return None if found is None else overall(found, top=len(found))
    model_file = snap.path / "models" / f"{model_id}.json"
    loads = json.loads(model_file.read_text()).get("cheapestSetupsByLoad") if model_file.is_file() else None
    if not any(a["context"] == context and a["concurrency"] == load.concurrency and "atDefaultFloor" in a
               for a in loads or []):
        return None  # a snapshot from before the floor, or a load it does not publish
    frame = pl.read_parquet(snap.path / "cheapest_setups.parquet").filter(
        (pl.col("model_id") == model_id) & (pl.col("list") == "on_demand") & (pl.col("context") == context)
        & (pl.col("concurrency") == load.concurrency) & (pl.col("sort") == "floor"))
    return overall([setup_from_row(r) for r in frame.to_dicts()])


def _at_load(args: argparse.Namespace, snap: Any, ref: Any, entry: dict[str, Any] | None, model_id: str,  # noqa: ANN401
             fmt: str | None, sort: str, engine: str | None, gpu: tuple[Any, Any, Any], filtered: bool,
             load: Any) -> dict[str, Any]:  # noqa: ANN401
    """``cheapest`` at a serving load: the cheapest setups (price order) meeting the service level, each served
    at the load by ``sizing_core.serving`` (the call ``fit --rate`` makes)."""
    from pipeline.cli.models import load_ref
    from pipeline.compute.answers import FIDELITY, configuration, fidelity_rank, rank_value
    from pipeline.compute.service_setups import SetupServer, at_service_level, practical_setups, why_none
    from pipeline.compute.setups import ON_DEMAND, SPOT_LIKE, OfferGroups, Planner
    from pipeline.exports.snapshot_offers import current_offers

    family, count, note = gpu
    level, source = level_of(args)
    arch = load_ref(ref)
    server = SetupServer(arch, load, args.context)
    list_name = "spot" if args.spot else "on_demand"
    published = None
    if entry is not None and not filtered and fmt is None and sort == "price" and not args.spot:
        published = _published_candidates(snap, entry["id"], load, args.context, source)
    origin, judged_note = "published", None
    kept: list[Any] = []
    judged = 0
    if published is not None:
        kept, judged = at_service_level(server, lambda k: published, level, args.top, args.allow_rpc,
                                        limit=len(published))
        if len(kept) < args.top:  # the published lists hold a configuration's most faithful format only
            judged_note = (f"the snapshot publishes {len(kept) or 'no'} setup(s) meeting the level at this load "
                           f"among its cheapest candidates, fewer than --top {args.top}: planned from the "
                           "snapshot's offers, deeper and in every format")
            kept = []
    if not kept:
        origin = "planned from the snapshot's offers"
        allocations = SPOT_LIKE if args.spot else ON_DEMAND
        offers = current_offers(snap, provider=args.provider, region=args.region, spot=args.spot, gpus=family,
                                count=count, max_count=args.max_gpus, available=args.available)
        grouped = OfferGroups(offers, allocations)
        formats = (fmt,) if fmt else FIDELITY
        memory = load.concurrency or 1  # requests of --context the plan holds (a rate: the engine's pool decides)
        planners = {f: Planner(arch, f, args.context, memory, "bf16", engine=engine) for f in formats}
        whole = after_search(args)

        def candidates(k: int) -> list[Any]:
            # every configuration in each format it runs (a less faithful one may meet the level where the most
            # faithful does not): the k cheapest (setup, format) pairs, a configuration's formats most faithful
            # first; the level keeps its most faithful meeting one (``once``)
            found = [s for f in formats for s in kept_setups(practical_setups(
                arch, f, grouped, context=args.context, concurrency=memory, top=10_000 if whole else k,
                allocations=allocations, planner=planners[f], sort="price", allow_rpc=True,
                by_region=args.by_region), args)]
            return sorted(found, key=lambda s: (rank_value(s), fidelity_rank(s.format), s.rank_key))[:k]

        kept, judged = at_service_level(server, candidates, level, args.top, args.allow_rpc, limit=SEARCH_LIMIT,
                                        once=lambda s: configuration(s, args.by_region))
        if level is not None and len(kept) < args.top and judged >= SEARCH_LIMIT:
            judged_note = "; ".join(filter(None, [judged_note, (
                f"searched the {SEARCH_LIMIT:,} cheapest candidates (setup x format): a dearer setup may meet the "
                "level too (`--gpu`, `--provider` or `--max-price` narrow the search)")]))
    if sort == "per_token":
        kept = sorted(kept, key=lambda j: j.to_json(level)["usdPerMillionOutputTokens"] or float("inf"))
    if not kept and level is None:
        raise _Error(f"no setup of {model_id} serves this load in snapshot {snap.id}: "
                     + ("no offer matches the filters" if judged == 0 else f"none of {judged} candidates serves a "
                        "request of it") + "; try a lighter load, another format or fewer filters")
    if not kept:
        raise _Error(f"no setup of {model_id} meets the service level at this load in snapshot {snap.id}"
                     f" ({why_none([], level) if judged == 0 else 'served ' + str(judged) + ' candidates'}); "
                     "try --no-slo, a looser --ttft-p90 or --min-tokens-per-s, or a lighter load")
    from sizing_core.serving.service_level import standard_workload

    return {"model": model_id, "repo": ref.repo or (entry or {}).get("repo"), "snapshot": snap.id,
            "context": args.context, "concurrency": load.concurrency,
            "sort": sort, "list": list_name, "format": fmt, "origin": origin, "modelSource": ref.origin,
            "gpuNote": note,
            "filters": filters_json(args, family, count, engine),
            "load": {"rate": load.rate, "concurrency": load.concurrency, "inputTokens": load.input_tokens,
                     "outputTokens": load.output_tokens,
                     "standard": load.rate is None and load == standard_workload(args.context, load.concurrency)},
            "serviceLevel": level.to_json() if level is not None else None, "serviceLevelSource": source,
            "allowRpc": args.allow_rpc, "judged": judged, "note": judged_note,
            "setups": [served_row(j, level) for j in kept]}


def served_row(judged: Any, level: Any) -> dict[str, Any]:  # noqa: ANN401 - a Served and a ServiceLevel
    """A setup row at a load: the row's own keys with the figures that depend on the load taken from its serving
    (so the row carries one $/1M and one tokens/s per request, the load's; the plan's memory figures stay)."""
    serving = judged.to_json(level)
    row = setup_row(judged.setup) | {"serving": serving}
    if serving is not None:
        for camel, snake, key in (("usdPerMillionTokensAtLoad", "usd_per_million_tokens_at_load",
                                   "usdPerMillionOutputTokens"),
                                  ("tokensPerSPerRequest", "tokens_per_s_per_request", "tokensPerSPerUser")):
            row[camel] = row[snake] = serving[key]
    return row
