"""vramlab rebuild: re-create the DuckDB file from the raw landing (pipeline/ops/rebuild.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.cli.args import examples


def register(sub: argparse._SubParsersAction) -> None:
    rebuild = sub.add_parser("rebuild", help="re-create the DuckDB file from the raw landing (after damage or loss)",
                             epilog=examples("vramlab rebuild", "vramlab rebuild --data-dir /srv/vramlab/data"))
    rebuild.add_argument("--data-dir", default=None, help="data directory (default: $VRAMLAB_DATA_DIR, else data/ in the project; installed: ~/.local/share/vramlab)")
    rebuild.set_defaults(func=cmd_rebuild)


def cmd_rebuild(args: argparse.Namespace) -> int:
    from pipeline.ops.rebuild import rebuild_main  # logic lives with the storage layer

    return rebuild_main(Path(args.data_dir) if args.data_dir else None)
