"""vramlab cost-history: what running a model at a load cost per day, on its cheapest setup of each day."""

from __future__ import annotations

import argparse
from typing import Any

from pipeline.cli.args import CONTEXT, POSITIVE, data_dir_flag, data_dir_of, examples, json_flag, print_json

HOURS_PER_MONTH = 730


#: setups of today's cheapest list whose shapes an unpublished load is priced on (the published lists hold 5-70)
PLANNED_SETUPS = 20


def register(sub: argparse._SubParsersAction) -> None:
    cost = sub.add_parser("cost-history", help="per day, the cheapest on-demand $/h to run a model at a load",
                          description="What running a model at a load cost over time: per UTC day the cheapest "
                                      "on-demand $/h (and $/month at 730 h) of the setup shapes today's cheapest "
                                      "setups list for that load (GPU, GPUs per instance, instances, format), "
                                      "priced with each day's eligible observations of such an instance; per day "
                                      "the providers that could run it and what changed, and the first and last "
                                      "day compared over the providers both have. A load the snapshot publishes "
                                      "for a tracked model uses its published setups; any other load or model, "
                                      f"the top {PLANNED_SETUPS} setups `vramlab cheapest` plans on the snapshot's "
                                      "offers.",
                          epilog=examples("vramlab cost-history qwen3-8b", "vramlab cost-history deepseek-v3 "
                                          "--context 32768 --concurrency 8 --json",
                                          "vramlab cost-history qwen3-8b --context 16k --concurrency 4"))
    cost.add_argument("model", metavar="MODEL",
                      help="a tracked model id (as `vramlab models` lists it), a Hub repo id or a config path")
    cost.add_argument("--context", type=CONTEXT, default=8192, metavar="N",
                      help="tokens per request (default 8192)")
    cost.add_argument("--concurrency", type=POSITIVE, default=1, metavar="K",
                      help="requests at once (default 1)")
    cost.add_argument("--days", type=POSITIVE, default=None, metavar="N",
                      help="only the last N days up to the newest observation (default: all)")
    data_dir_flag(cost)
    json_flag(cost, "a JSON object: rows per day and provider, per day the cheapest with its providers, and the "
                    "like-for-like first-to-last comparison")
    cost.set_defaults(func=cmd_cost_history)


def planned_shapes(args: argparse.Namespace) -> tuple[str, list[tuple[Any, ...]]]:
    """The model's id and the setup shapes (GPU, GPUs per instance, instances, format) of the cheapest setups
    `vramlab cheapest MODEL --context C --concurrency K` plans on the snapshot's offers, first-ranked first."""
    from pipeline.cli.cheapest import cheapest_result
    from pipeline.cli.commands.cheapest import question

    asked = question([args.model, "--context", str(args.context), "--concurrency", str(args.concurrency),
                      "--top", str(PLANNED_SETUPS)])
    result = cheapest_result(asked, data_dir_of(args))
    shapes: dict[tuple[str, int, int], str] = {}
    for s in result["setups"]:
        shapes.setdefault((s["gpu_id"], s["gpus_per_instance"], s["instances"]), s["format"])
    return result["model"], [(*shape, fmt) for shape, fmt in shapes.items()]


def cmd_cost_history(args: argparse.Namespace) -> int:
    from pipeline.cli.resolve import published_snapshot
    from pipeline.exports.price_history import (
        by_day,
        first_to_last,
        model_cost_history,
        published_loads,
        published_shapes,
    )

    snapshot = published_snapshot(data_dir_of(args))
    model = args.model.strip().lower()
    if (args.context, args.concurrency) in published_loads(snapshot.path, model):
        shapes, origin = published_shapes(snapshot.path, model, args.context, args.concurrency), "published"
    else:
        (model, shapes), origin = planned_shapes(args), "planned from the snapshot's offers"
    rows = model_cost_history(snapshot.path, shapes, days=args.days)
    days = by_day(rows)
    for d in days:
        d["perMonth"] = round(d["cheapest"] * HOURS_PER_MONTH, 2)
    compared = first_to_last(rows, days)
    if args.json:
        print_json({"model": model, "snapshot": snapshot.id, "context": args.context,
                    "concurrency": args.concurrency, "days": args.days, "rows": rows, "byDay": days,
                    "likeForLike": compared, "origin": origin,
                    "shapes": [{"gpuId": g, "gpusPerInstance": k, "instances": n, "format": f}
                               for g, k, n, f in shapes]})
        return 0
    from pipeline.cli.tables import print_cost_history, say

    if not rows:
        say(f"no eligible on-demand observation prices a setup of {model} at {args.concurrency} x "
            f"{args.context:,} tokens (snapshot {snapshot.id})")
        return 0
    print_cost_history(model, args.context, args.concurrency, rows, days, snapshot.id, compared,
                       published=origin == "published")
    return 0
