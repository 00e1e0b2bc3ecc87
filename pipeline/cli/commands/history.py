"""vramlab history: the cheapest $/GPU-hour per day and provider for a GPU, from the snapshot's observations."""

from __future__ import annotations

import argparse

from pipeline.cli.args import POSITIVE, data_dir_flag, data_dir_of, examples, json_flag, print_json
from pipeline.cli.errors import CliError


def register(sub: argparse._SubParsersAction) -> None:
    history = sub.add_parser("history", help="cheapest $/GPU-hour of a GPU per day and provider, from observations",
                             description="What a GPU cost over time: per UTC day and provider, the cheapest eligible "
                                         "$/GPU-hour observed (quarantined and merged-duplicate offers left out), "
                                         "from the latest snapshot's price_observations; the day's cheapest "
                                         "provider is starred. A second table lists each day's providers and what "
                                         "changed from the day before; the first and last day are compared over "
                                         "the providers both have (like for like). A family name (H100) covers "
                                         "every variant.",
                             epilog=examples("vramlab history H100", "vramlab history h100-sxm --days 30",
                                             "vramlab history A100 --provider lambda --json",
                                             "vramlab history rtx-4090 --spot"))
    history.add_argument("gpu", metavar="GPU", help="GPU id, alias or family (H100 = SXM, PCIe and NVL)")
    history.add_argument("--provider", default=None, metavar="P", help="only this provider (any case)")
    history.add_argument("--days", type=POSITIVE, default=None, metavar="N",
                         help="only the last N days up to the newest observation (default: all)")
    history.add_argument("--spot", action="store_true", help="spot and marketplace prices instead of on-demand")
    data_dir_flag(history)
    json_flag(history, "a JSON object: the rows per day and provider, per day the cheapest, the spread and "
                       "the providers (with what changed), and the like-for-like first-to-last comparison")
    history.set_defaults(func=cmd_history)


def cmd_history(args: argparse.Namespace) -> int:
    from pipeline.cli.resolve import family_note, gpu_family, published_snapshot, split_count
    from pipeline.exports.price_history import by_day, daily_cheapest, first_to_last

    name, count = split_count(args.gpu)
    if count:
        raise CliError(f"history is per GPU, not per instance size: drop ':{count}' from {args.gpu!r}")
    family = gpu_family(name)
    snapshot = published_snapshot(data_dir_of(args), args.provider)
    rows = daily_cheapest(snapshot.path, family, provider=args.provider, days=args.days, spot=args.spot)
    days = by_day(rows)
    compared = first_to_last(rows, days)
    what = "spot/marketplace" if args.spot else "on-demand"
    if args.json:
        print_json({"gpu": name, "gpus": list(family), "snapshot": snapshot.id, "list": "spot" if args.spot else
                    "on_demand", "provider": args.provider, "days": args.days, "rows": rows, "byDay": days,
                    "likeForLike": compared})
        return 0
    from pipeline.cli.tables import print_history, say

    note = family_note(name, family)
    if note:
        say(f"note: {note}")
    if not rows:
        say(f"no eligible {what} price of {name} observed" + (f" at {args.provider}" if args.provider else "")
            + (f" in the last {args.days} days" if args.days else "") + f" (snapshot {snapshot.id})")
        return 0
    print_history(name, what, rows, days, snapshot.id, compared)
    return 0
