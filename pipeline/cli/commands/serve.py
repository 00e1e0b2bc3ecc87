"""vramlab serve: the hourly service (Dagster daemon with the schedule on, and the UI) in one command."""

from __future__ import annotations

import argparse

from pipeline.cli.args import POSITIVE, data_dir_flag, examples


def register(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser("serve", help="run the pipeline every hour: Dagster daemon (schedule on) and UI",
                           description="Start dagster-daemon, with the hourly_refresh schedule on, and "
                                       "dagster-webserver on one persistent Dagster instance ($DAGSTER_HOME, else "
                                       ".dagster_home/ in the project). Ctrl-C or SIGTERM stops both. The UI is "
                                       "read-only unless --allow-launch, and answers only requests addressed to "
                                       "this machine (or an --allow-host name), never a cross-site page.",
                           epilog=examples("vramlab serve", "vramlab serve --port 3001",
                                           "VRAMLAB_LIVE=1 vramlab serve --allow-launch",
                                           "vramlab serve --allow-host vramlab.example.org   # behind a proxy")
                           + "\n\nThe UI has no login of its own: keep it on 127.0.0.1. To reach it from elsewhere, put\n"
                             "a reverse proxy that authenticates (nginx or Caddy with basic auth, oauth2-proxy for\n"
                             "OIDC) in front of 127.0.0.1:3000 and name its host with --allow-host; never use\n"
                             "--host 0.0.0.0 without one (docs/operating.md, \"The UI and the hourly schedule\").")
    serve.add_argument("--host", default="127.0.0.1", metavar="H",
                       help="UI address (default 127.0.0.1; anything else only behind an authenticating proxy)")
    serve.add_argument("--allow-launch", action="store_true",
                       help="let the UI launch runs and backfills and turn schedules on/off (default: read-only)")
    serve.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                       help="a host name the UI answers besides localhost/127.0.0.1/[::1] (repeatable; also "
                            "VRAMLAB_UI_ALLOWED_HOSTS, comma-separated)")
    serve.add_argument("--port", type=POSITIVE, default=3000, metavar="P", help="UI port (default 3000)")
    serve.add_argument("--cron", default=None, metavar="EXPR",
                       help="schedule other than hourly, in cron syntax, UTC (default '0 * * * *')")
    data_dir_flag(serve)
    serve.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from pipeline.ops.serve import serve

    return serve(args.host, args.port, args.data_dir, cron=args.cron, allow_launch=args.allow_launch,
                 allow_hosts=tuple(args.allow_host))
