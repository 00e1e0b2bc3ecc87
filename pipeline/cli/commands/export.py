"""vramlab export --check: verify a published snapshot against its manifest."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.cli.args import data_dir_flag, data_dir_of, examples
from pipeline.cli.errors import CliError
from pipeline.data_dir import DataDir


def register(sub: argparse._SubParsersAction) -> None:
    export = sub.add_parser("export", help="verify a published snapshot against its manifest",
                            description="Verify a snapshot (default: latest) against its manifest.",
                            epilog=examples("vramlab export --check"))
    export.add_argument("--check", action="store_true", required=True,
                        help="verify a snapshot (default: latest) against its manifest")
    export.add_argument("--snapshot", default=None, metavar="DIR", help="snapshot folder (default: exports/latest)")
    data_dir_flag(export)
    export.set_defaults(func=cmd_export_check)


def cmd_export_check(args: argparse.Namespace) -> int:
    from pipeline.cli.text import clean
    from pipeline.exports.publish import check_snapshot, latest

    snapshot = Path(args.snapshot) if args.snapshot else latest(DataDir(data_dir_of(args)).exports)
    if snapshot is None or not snapshot.is_dir():
        raise CliError("no snapshot to check")
    problems = check_snapshot(snapshot)
    for problem in problems:
        print(f"{snapshot.name}: {clean(problem)}")
    print(f"{snapshot.name}: {'OK' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0
