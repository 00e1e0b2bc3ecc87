"""vramlab serve: the hourly service (Dagster daemon with the schedule on, and the UI) in one command."""

from __future__ import annotations

import argparse

from pipeline.cli.args import POSITIVE, data_dir_flag, examples


def register(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser("serve", help="run the pipeline every hour: Dagster daemon (schedule on) and UI",
                           description="Start dagster-daemon, with the hourly_refresh schedule on, and "
                                       "dagster-webserver on one persistent Dagster instance ($DAGSTER_HOME, else "
                                       ".dagster_home/ in the project). Ctrl-C or SIGTERM stops both.",
                           epilog=examples("vramlab serve", "vramlab serve --port 3001",
                                           "VRAMLAB_LIVE=1 vramlab serve --host 0.0.0.0"))
    serve.add_argument("--host", default="127.0.0.1", metavar="H", help="UI address (default 127.0.0.1)")
    serve.add_argument("--port", type=POSITIVE, default=3000, metavar="P", help="UI port (default 3000)")
    serve.add_argument("--cron", default=None, metavar="EXPR",
                       help="schedule other than hourly, in cron syntax, UTC (default '0 * * * *')")
    data_dir_flag(serve)
    serve.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from pipeline.ops.serve import serve

    return serve(args.host, args.port, args.data_dir, cron=args.cron)
