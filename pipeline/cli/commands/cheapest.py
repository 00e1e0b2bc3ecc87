"""vramlab cheapest: cheapest rentable setups for a model from the latest snapshot."""

from __future__ import annotations

import argparse

from pipeline.cli.args import (
    CONTEXT,
    POSITIVE,
    PRICE,
    data_dir_flag,
    data_dir_of,
    examples,
    json_flag,
    print_json,
)


def register(sub: argparse._SubParsersAction) -> None:
    cheapest = sub.add_parser("cheapest", help="cheapest rentable setups for a model, from the latest snapshot",
                              description="Cheapest rentable deployments of a model from the latest snapshot: whole "
                                          "instances, parallelism plan, engine, format, $/h, $/month, $/1M tokens.",
                              epilog=examples("vramlab cheapest qwen3-8b", "vramlab cheapest llama-3.1-70b --format fp8",
                                               "vramlab cheapest deepseek-v3 --single-machine --provider lambda",
                                               "vramlab cheapest gpt-oss-20b --context 32k --spot --json"))
    cheapest.add_argument("model", metavar="MODEL", help="tracked model id or Hub repo id (see `vramlab models`)")
    cheapest.add_argument("--format", default=None, metavar="FMT",
                          help="only this weight format, any case (default: the most faithful per setup)")
    cheapest.add_argument("--context", type=CONTEXT, default=8192, metavar="N",
                          help="tokens per request: 8192, 32k, 1M (default 8192, as published)")
    cheapest.add_argument("--top", type=POSITIVE, default=10, metavar="K", help="rows to show (default 10)")
    cheapest.add_argument("--provider", default=None, metavar="P", help="only this provider (any case)")
    cheapest.add_argument("--region", default=None, metavar="R", help="only regions starting with R")
    cheapest.add_argument("--max-price", type=PRICE, default=None, metavar="USD", help="at most this $/hour in all")
    cheapest.add_argument("--spot", action="store_true", help="spot and marketplace offers instead of on-demand")
    cheapest.add_argument("--single-machine", action="store_true", help="only setups on one instance")
    data_dir_flag(cheapest)
    json_flag(cheapest)
    cheapest.set_defaults(func=cmd_cheapest)


def cmd_cheapest(args: argparse.Namespace) -> int:
    from pipeline.cli.cheapest import cheapest_result
    from pipeline.cli.tables import print_setups

    result = cheapest_result(args, data_dir_of(args))
    if args.json:
        print_json(result)
    else:
        print_setups(result)
    return 0
