"""vramlab run: the whole pipeline once (pipeline/ops/run.py does the work)."""

from __future__ import annotations

import argparse
import os

from pipeline.cli.args import data_dir_flag, examples


def register(sub: argparse._SubParsersAction) -> None:
    run = sub.add_parser("run", help="run the whole pipeline once, recorded in the Dagster instance",
                         description="Materialize the whole asset graph once as job vramlab_refresh, recorded in "
                                     "the persistent Dagster instance ($DAGSTER_HOME, else .dagster_home/ in the "
                                     "project) so the UI shows it (`vramlab serve`, or `python -m pipeline.ops.webui "
                                     "-w workspace.yaml --read-only`).",
                         epilog=examples("vramlab run", "VRAMLAB_LIVE=1 vramlab run",
                                          "vramlab run --data-dir /tmp/vramlab --ephemeral"))
    data_dir_flag(run)
    run.add_argument("--ephemeral", action="store_true",
                     help="record nothing: use a throw-away Dagster instance")
    run.add_argument("--quiet", action="store_true", help="no progress display, only the summary")
    run.add_argument("--allow-clock-behind", action="store_true",
                     help="go on although this machine's clock is behind the newest recorded fetch (live mode)")
    run.add_argument("--force", action="store_true",
                     help="start even if the instance lists another refresh as running (its process is gone)")
    run.set_defaults(func=cmd_run)


def cmd_run(args: argparse.Namespace) -> int:
    from pipeline.ops.run import run_main_job

    if args.allow_clock_behind:  # read by the raw assets (pipeline/sources/landing.py::check_clock)
        os.environ["VRAMLAB_ALLOW_CLOCK_BEHIND"] = "1"
    return run_main_job(data_dir=args.data_dir, ephemeral=args.ephemeral, quiet=args.quiet, force=args.force)
