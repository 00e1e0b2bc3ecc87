"""vramlab models: the tracked models and the bundled registry; with --fits, which of them run on a GPU."""

from __future__ import annotations

import argparse

from pipeline.cli.args import answer_flags, data_dir_flag, data_dir_of, examples, json_flag, print_json


def register(sub: argparse._SubParsersAction) -> None:
    models = sub.add_parser("models", help="tracked models: id, repo, parameters, max context, native format; "
                                           "--fits GPU: which run on it",
                            description="The models vramlab tracks (pipeline/data/watchlist.json) and the bundled "
                                        "registry, with what each can be called on the command line. With --fits "
                                        "GPU[:N]: which of them run on at most N of that GPU (default 1), each in "
                                        "the most faithful format that fits, with its plan, speed and the "
                                        "cheapest current offer running it.",
                            epilog=examples("vramlab models", "vramlab models --json", "vramlab models --fits rtx-4090",
                                            "vramlab models --fits h100:2 --context 32k",
                                            "vramlab models --fits l40s --rate 1 --input-tokens 1000 "
                                            "--output-tokens 200 --json"))
    models.add_argument("--fits", default=None, metavar="GPU[:N]",
                        help="only the models that run on at most N of this GPU (id or alias, any case; default "
                             "N 1), with format, plan, speed and price")
    answer_flags(models)
    data_dir_flag(models)
    json_flag(models, "a JSON array (with --fits: one JSON object)")
    models.set_defaults(func=cmd_models)


def cmd_models(args: argparse.Namespace) -> int:
    if args.fits:
        return _fits(args)
    from pipeline.cli.errors import CliError

    asked = [flag for flag, value in (("--format", args.format), ("--concurrency", args.concurrency),
                                      ("--rate", args.rate), ("--input-tokens", args.input_tokens),
                                      ("--output-tokens", args.output_tokens), ("--engine", args.engine))
             if value is not None] + (["--context"] if args.context != 8192 else [])
    if asked:
        raise CliError(f"{', '.join(asked)} ask(s) about a GPU: give --fits GPU[:N]")
    from pipeline.cli.catalog import model_rows
    from pipeline.cli.tables import print_models

    rows = model_rows(data_dir_of(args))
    if args.json:
        print_json(rows)
    else:
        print_models(rows)
    return 0


def _fits(args: argparse.Namespace) -> int:
    from pipeline.cli.commands.fit import question_of
    from pipeline.cli.on_gpu import models_on
    from pipeline.cli.resolve import resolve_format, resolve_gpu, split_count
    from pipeline.exports.snapshot_offers import latest_snapshot
    from sizing_core.gpus import get_gpu

    name, count = split_count(args.fits)
    gpu = get_gpu(resolve_gpu(name))
    fmt = resolve_format(args.format) if args.format else None
    question = question_of(args)
    data_dir = data_dir_of(args)
    result = models_on(data_dir, gpu, count or 1, question, fmt, latest_snapshot(data_dir))
    if args.json:
        print_json(result)
    else:
        from pipeline.cli.tables import print_models_on

        print_models_on(result)
    return 0
