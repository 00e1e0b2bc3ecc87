"""vramlab parts run: the partitioned refresh, one run per price source and per model (pipeline/ops/partitioned.py)."""

from __future__ import annotations

import argparse
import json
import os

from pipeline.cli.args import data_dir_flag, examples


def _names(text: str) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()]


def register(sub: argparse._SubParsersAction) -> None:
    parts = sub.add_parser("parts", help="the partitioned refresh: a run per price source and per model, in parallel "
                                         "processes, consolidated into DuckDB by one step (docs/operating.md)",
                           epilog=examples("vramlab parts run", "vramlab parts run --sources runpod,vastai",
                                           "vramlab parts run --models qwen3-8b --concurrency 4"))
    parts_sub = parts.add_subparsers(dest="parts_command", required=True)
    run = parts_sub.add_parser("run", help="prepare, back-fill the source partitions, consolidate the offers, "
                                           "back-fill the model partitions, consolidate and publish",
                               epilog=examples("vramlab parts run", "vramlab parts run --sources ecb,runpod --json"))
    data_dir_flag(run)
    run.add_argument("--sources", type=_names, default=None, metavar="A,B",
                     help="only these price source partitions (default: every source)")
    run.add_argument("--models", type=_names, default=None, metavar="X,Y",
                     help="only these model partitions (default: every registered model); publishing needs every "
                          "tracked model's parts to be current")
    run.add_argument("--concurrency", type=int, default=2, metavar="N", help="partition runs at a time (default 2)")
    run.add_argument("--celery", action="store_true",
                     help="the partition steps on dagster-celery workers (VRAMLAB_CELERY_BROKER; scripts/cluster.py)")
    run.add_argument("--no-publish", action="store_true", help="stop after the model partitions (no consolidation)")
    run.add_argument("--json", action="store_true", help="print the outcome of every run as one JSON object")
    run.set_defaults(func=cmd_parts_run)


def cmd_parts_run(args: argparse.Namespace) -> int:
    from pipeline.errors import UserError

    if args.concurrency < 1:
        raise UserError(f"--concurrency must be at least 1, got {args.concurrency}")
    if args.data_dir:  # before the definitions are imported: their resources read it
        os.environ["VRAMLAB_DATA_DIR"] = args.data_dir
    import dagster as dg

    from pipeline.ops.partitioned import run_partitioned
    from pipeline.ops.run import dagster_home

    os.environ["DAGSTER_HOME"] = str(dagster_home())  # the persistent instance: partition runs record there
    with dg.DagsterInstance.get() as instance:
        out = run_partitioned(instance, sources=args.sources, models=args.models, concurrency=args.concurrency,
                              publish=not args.no_publish, celery=args.celery,
                              log=(lambda _line: None) if args.json else print)
    ok = out["prepare"] and all(out["sources"].values()) and out.get("offers", False) and \
        all(out["models"].values()) and out.get("publish", args.no_publish)
    if args.json:
        print(json.dumps(out, sort_keys=True))
    else:
        failed = [f"source {k}" for k, v in out["sources"].items() if not v] + \
                 [f"model {k}" for k, v in out["models"].items() if not v]
        print(f"vramlab parts: {'done' if ok else 'FAILED'} in {out['seconds']:.0f} s"
              + (f"; failed partitions: {', '.join(failed)}" if failed else ""))
    return 0 if ok else 1
