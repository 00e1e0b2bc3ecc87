"""vramlab cost-history: what running a model at a load cost per day, on its cheapest setup of each day."""

from __future__ import annotations

import argparse
import json

from pipeline.cli.args import CONTEXT, POSITIVE, data_dir_flag, data_dir_of, examples, json_flag, print_json
from pipeline.cli.errors import CliError

HOURS_PER_MONTH = 730


def register(sub: argparse._SubParsersAction) -> None:
    cost = sub.add_parser("cost-history", help="per day, the cheapest on-demand $/h to run a model at a load",
                          description="What running a tracked model at one of its published loads cost over time: "
                                      "per UTC day the cheapest on-demand $/h (and $/month at 730 h) of the setup "
                                      "shapes the snapshot's cheapest setups list for that load (GPU, GPUs per "
                                      "instance, instances, format), priced with each day's eligible observations "
                                      "of such an instance; per day the providers that could run it and what "
                                      "changed, and the first and last day compared over the providers both have.",
                          epilog=examples("vramlab cost-history qwen3-8b", "vramlab cost-history deepseek-v3 "
                                          "--context 32768 --concurrency 8 --json"))
    cost.add_argument("model", metavar="MODEL", help="a tracked model id (as `vramlab models` lists it)")
    cost.add_argument("--context", type=CONTEXT, default=8192, metavar="N",
                      help="tokens per request, one of the model's published loads (default 8192)")
    cost.add_argument("--concurrency", type=POSITIVE, default=1, metavar="K",
                      help="requests at once, one of the model's published loads (default 1)")
    cost.add_argument("--days", type=POSITIVE, default=None, metavar="N",
                      help="only the last N days up to the newest observation (default: all)")
    data_dir_flag(cost)
    json_flag(cost, "a JSON object: rows per day and provider, per day the cheapest with its providers, and the "
                    "like-for-like first-to-last comparison")
    cost.set_defaults(func=cmd_cost_history)


def cmd_cost_history(args: argparse.Namespace) -> int:
    from pipeline.cli.resolve import did_you_mean, published_snapshot
    from pipeline.exports.price_history import by_day, first_to_last, model_cost_history, published_loads

    snapshot = published_snapshot(data_dir_of(args))
    model = args.model.strip().lower()
    loads = published_loads(snapshot.path, model)
    if not loads:
        index = json.loads((snapshot.path / "index.json").read_text())
        known = [m["id"] for m in index["models"] if m.get("status", "ok") == "ok"]
        raise CliError(f"no published setups of {args.model!r} in snapshot {snapshot.id}{did_you_mean(model, known)}"
                       "; cost-history answers tracked models (`vramlab models`)")
    if (args.context, args.concurrency) not in loads:
        shown = ", ".join(f"--context {c} --concurrency {k}" for c, k in loads)
        raise CliError(f"{model} has no published answer for {args.concurrency} x {args.context:,} tokens; its "
                       f"loads: {shown}")
    rows = model_cost_history(snapshot.path, model, args.context, args.concurrency, days=args.days)
    days = by_day(rows)
    for d in days:
        d["perMonth"] = round(d["cheapest"] * HOURS_PER_MONTH, 2)
    compared = first_to_last(rows, days)
    if args.json:
        print_json({"model": model, "snapshot": snapshot.id, "context": args.context,
                    "concurrency": args.concurrency, "days": args.days, "rows": rows, "byDay": days,
                    "likeForLike": compared})
        return 0
    from pipeline.cli.tables import print_cost_history, say

    if not rows:
        say(f"no eligible on-demand observation prices a setup of {model} at {args.concurrency} x "
            f"{args.context:,} tokens (snapshot {snapshot.id})")
        return 0
    print_cost_history(model, args.context, args.concurrency, rows, days, snapshot.id, compared)
    return 0
