"""vramlab replay backfill: the replay series as price history (pipeline/ops/replay_backfill.py)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from pipeline.cli.args import data_dir_flag, data_dir_of, examples
from pipeline.data_dir import DataDir
from pipeline.settings import variable


def register(sub: argparse._SubParsersAction) -> None:
    replay = sub.add_parser("replay", help="offline replay series (pipeline/replay/prices/series.json)",
                            epilog=examples("vramlab replay backfill", "vramlab replay backfill --no-run"))
    replay_sub = replay.add_subparsers(dest="replay_command", required=True)
    backfill = replay_sub.add_parser("backfill", help="build the price history from the series (idempotent), then "
                                                      "run the main job on the current recordings",
                                      epilog=examples("vramlab replay backfill",
                                                       "vramlab replay backfill --no-run --data-dir /tmp/vl"))
    data_dir_flag(backfill)
    backfill.add_argument("--no-run", action="store_true", help="only the history steps, no main job")
    backfill.set_defaults(func=cmd_replay_backfill)


def cmd_replay_backfill(args: argparse.Namespace) -> int:
    """Replay the series' earlier steps through the price assets, then (unless --no-run) the main job."""
    data_dir = data_dir_of(args)
    # before the definitions are imported (backfill_history imports them): their resources read the data dir, and the
    # main job at the end must run on the same one as the history steps
    os.environ["VRAMLAB_DATA_DIR"] = str(data_dir)
    from pipeline.ops.replay_backfill import backfill_history
    from pipeline.ops.run import run_main_job

    db = Path(variable("VRAMLAB_DB").text() or DataDir(data_dir).database)
    for step in backfill_history(data_dir, db):
        print(f"{step.step} (as of {step.as_of:%Y-%m-%d %H:%M}, {', '.join(step.sources)}): {step.status}")
    return 0 if args.no_run else run_main_job(data_dir=str(data_dir))
