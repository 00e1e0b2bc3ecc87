"""vramlab models: the tracked models and the bundled registry."""

from __future__ import annotations

import argparse

from pipeline.cli.args import data_dir_flag, data_dir_of, examples, json_flag, print_json


def register(sub: argparse._SubParsersAction) -> None:
    models = sub.add_parser("models", help="tracked models: id, repo, parameters, max context, native format",
                            description="The models vramlab tracks (pipeline/data/watchlist.json) and the bundled "
                                        "registry, with what each can be called on the command line.",
                            epilog=examples("vramlab models", "vramlab models --json"))
    data_dir_flag(models)
    json_flag(models, "a JSON array")
    models.set_defaults(func=cmd_models)


def cmd_models(args: argparse.Namespace) -> int:
    from pipeline.cli.catalog import model_rows
    from pipeline.cli.tables import print_models

    rows = model_rows(data_dir_of(args))
    if args.json:
        print_json(rows)
    else:
        print_models(rows)
    return 0
