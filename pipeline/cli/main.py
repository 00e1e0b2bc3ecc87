"""The vramlab command line: one module per command in ``pipeline/cli/commands/`` (its parser beside its code);
this module assembles them and turns user errors into one line on stderr with exit status 2. Sub-commands keep
their flags and JSON keys stable (other tools call them): keys are added, never renamed.

Start-up matters for size, fit, gpus and models: the command modules import only argparse at top level; each
command imports what it needs when it runs (Dagster only for run, rebuild and replay).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from pipeline.cli.args import PROG, Parser, Version, examples
from pipeline.cli.commands import (
    cheapest,
    compare,
    cost_history,
    export,
    finetune,
    fit,
    gpus,
    history,
    models,
    parts,
    rebuild,
    replay,
    run,
    serve,
    size,
    sources,
    track,
)
from pipeline.errors import UserError, discard_stdout

COMMANDS = (size, fit, finetune, compare, models, gpus, cheapest, history, cost_history, track, sources, export, run, serve, replay, rebuild,
            parts)  # --help order


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog=PROG, description="How much GPU memory an open-weight LLM needs, on which GPUs, how fast, "
                                           "and where it is cheapest to rent today.",
                    epilog=examples("vramlab models", "vramlab size qwen3-8b --contexts 8k,32k",
                                    "vramlab fit gpt-oss-20b --gpu rtx-4090", "vramlab gpus H100:8 --max-price 3",
                                    "vramlab cheapest llama-3.1-70b --format fp8",
                                    "vramlab models --fits rtx-4090",
                                    "vramlab compare qwen3-8b --gpu h100 --gpu l40s --gpu rtx-4090", "vramlab run"))
    parser.add_argument("--version", action=Version)
    parser.add_argument("--data-dir", dest="global_data_dir", metavar="DIR",
                        help="the data directory, before the command as after it (`vramlab --data-dir D models`)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    for command in COMMANDS:
        command.register(sub)
    return parser


# ------------------------------------------------------------------------------------------------ entry point

def _user_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = [UserError, KeyError]
    if "sizing_core" in sys.modules:  # only when a command loaded it: keeps start-up light
        from sizing_core import SizingError

        errors.append(SizingError)
    return tuple(errors)


#: commands that answer from the sizing library and the latest snapshot: kept fast (docs/cli.md, start-up)
QUICK_COMMANDS = ("size", "fit", "gpus", "models", "cheapest", "compare")


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.global_data_dir and getattr(args, "data_dir", None) is None:  # the command's own flag wins
            args.data_dir = args.global_data_dir
        func: Callable[[argparse.Namespace], int] = args.func
        if args.command in QUICK_COMMANDS:
            # vramlab uses no pydantic plugin; skipping their discovery (pydantic reads the entry points of every
            # installed distribution on the first model it builds) saves ~15 ms per answer. A value the user set
            # is kept; `run` (Dagster) is left alone.
            os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
        try:
            code = func(args)
        except Exception as exc:
            if not isinstance(exc, _user_errors()):
                raise
            message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
            from pipeline.cli.text import clean  # a message may quote provider or Hub text

            print(f"{PROG}: error: {clean(message, lines=True)}", file=sys.stderr)
            return 2
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # the reader went away (`vramlab gpus --json | head`): no traceback, and no second error at exit
        discard_stdout()
        return 0
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
