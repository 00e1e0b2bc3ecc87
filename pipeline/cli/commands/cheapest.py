"""vramlab cheapest: cheapest rentable setups for a model from the latest snapshot."""

from __future__ import annotations

import argparse

from pipeline.cli.args import (
    AMOUNT,
    CONTEXT,
    POSITIVE,
    PRICE,
    data_dir_flag,
    data_dir_of,
    examples,
    json_flag,
    load_flags,
    print_json,
)


def register(sub: argparse._SubParsersAction) -> None:
    cheapest = sub.add_parser("cheapest", help="cheapest setups serving K requests at context C, for any model",
                              description="Cheapest rentable deployments of any model (tracked, Hub repo id, "
                                          "registry id or config path) serving --concurrency requests of --context "
                                          "tokens, from the latest snapshot's offers: whole instances, parallelism "
                                          "plan, engine, format, $/h, $/1M output tokens at that load, tok/s per "
                                          "request, requests the plan holds at that context. One row per provider x "
                                          "instance type x price, the regions offering it in one cell.",
                              epilog=examples("vramlab cheapest qwen3-8b",
                                               "vramlab cheapest meta-llama/Llama-3.3-70B-Instruct --context 32k "
                                               "--concurrency 8 --single-machine",
                                               "vramlab cheapest deepseek-v3 --top 3 --sort per-token",
                                               "vramlab cheapest llama-3.1-70b --format fp8 --gpu H100",
                                               "vramlab cheapest gpt-oss-20b --context 32k --spot --json",
                                               "vramlab cheapest qwen3-32b --max-gpus 1 --available",
                                               "vramlab cheapest deepseek-v3 --fabric infiniband",
                                               "vramlab cheapest qwen3-8b --rate 2 --input-tokens 1000 "
                                               "--output-tokens 200",
                                               "vramlab cheapest llama-3.3-70b --concurrency 8 --input-tokens 2000 "
                                               "--output-tokens 300 --ttft-p90 1000 --min-tokens-per-s 20"))
    cheapest.add_argument("model", metavar="MODEL", help="tracked model id, Hub repo id (looked up when untracked), "
                                                          "registry id or config.json path")
    cheapest.add_argument("--format", default=None, metavar="FMT",
                          help="only this weight format, any case (default: the most faithful per setup)")
    cheapest.add_argument("--context", type=CONTEXT, default=8192, metavar="N",
                          help="tokens per request: 8192, 32k, 1M (default 8192, as published)")
    cheapest.add_argument("--concurrency", type=POSITIVE, default=None, metavar="K",
                          help="requests served at once, each of --context tokens (default 1); with "
                               "--input-tokens/--output-tokens: K clients in a closed loop")
    load_flags(cheapest, "ranks setups meeting a service level at that load")
    cheapest.add_argument("--ttft-p90", type=AMOUNT, default=None, metavar="MS",
                          help="at a load: time to first token at p90 at most MS milliseconds")
    cheapest.add_argument("--min-tokens-per-s", type=AMOUNT, default=None, metavar="X",
                          help="at a load: at least X tokens/s per user while an answer streams (1000 / ITL)")
    cheapest.add_argument("--no-slo", action="store_true",
                          help="at a load: no service level (pure price order; default: the interactive floor, "
                               "TTFT p90 <= 2 s and >= 10 tokens/s per user)")
    cheapest.add_argument("--allow-rpc", action="store_true",
                          help="rank llama.cpp RPC chains over separately rented machines by price like any "
                               "setup (default: after every other setup)")
    cheapest.add_argument("--engine", default=None, metavar="E",
                          help="vllm, sglang, llama.cpp, ollama, mlx (default: vLLM on data-centre GPUs, llama.cpp "
                               "elsewhere)")
    cheapest.add_argument("--gpu", default=None, metavar="GPU[:N]",
                          help="only this GPU (a family name such as H100 matches every variant) and, with :N, "
                               "instances of N GPUs")
    cheapest.add_argument("--sort", default="price", metavar="BY",
                          help="price ($/h, default) or per-token ($/1M output tokens at the load)")
    cheapest.add_argument("--top", type=POSITIVE, default=10, metavar="K", help="rows to show (default 10)")
    cheapest.add_argument("--provider", default=None, metavar="P", help="only this provider (any case)")
    cheapest.add_argument("--region", default=None, metavar="R", help="only regions starting with R")
    cheapest.add_argument("--max-price", type=PRICE, default=None, metavar="USD", help="at most this $/hour in all")
    cheapest.add_argument("--spot", action="store_true", help="spot and marketplace offers instead of on-demand")
    machines = cheapest.add_mutually_exclusive_group()
    machines.add_argument("--single-machine", action="store_true", help="only setups on one instance")
    machines.add_argument("--multi-machine", action="store_true",
                          help="only setups spanning several instances (with --fabric: over that fabric)")
    cheapest.add_argument("--max-gpus", type=POSITIVE, default=None, metavar="N",
                          help="only setups renting at most N GPUs in all (1: a single GPU)")
    cheapest.add_argument("--available", action="store_true",
                          help="only offers whose provider stated capacity at fetch time (low stock included; "
                               "default: also offers listed with capacity unknown)")
    cheapest.add_argument("--fabric", default=None, metavar="F",
                          help="multi-machine setups only over this cluster fabric (InfiniBand, RoCE, EFA, NVLink; "
                               "any case, part of the name); one-machine setups are kept unless --multi-machine")
    cheapest.add_argument("--by-region", action="store_true",
                          help="one row per region (default: one per provider x instance type x price)")
    data_dir_flag(cheapest)
    json_flag(cheapest)
    cheapest.set_defaults(func=cmd_cheapest)


def question(argv: list[str]) -> argparse.Namespace:
    """``vramlab cheapest ARGV`` read as the command line reads it (every default in place), for a command that asks
    `cheapest` a question of its own (``cost-history`` at a load the snapshot does not publish)."""
    parser = argparse.ArgumentParser(prog="vramlab")
    register(parser.add_subparsers())
    return parser.parse_args(["cheapest", *argv])


def cmd_cheapest(args: argparse.Namespace) -> int:
    from pipeline.cli.cheapest import cheapest_result
    from pipeline.cli.tables import print_setups

    result = cheapest_result(args, data_dir_of(args))
    if args.json:
        print_json(result)
    elif result.get("load"):
        from pipeline.cli.tables import print_served_setups

        print_served_setups(result)
    else:
        print_setups(result)
    return 0
