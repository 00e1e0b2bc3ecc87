#!/usr/bin/env python3
"""A local Celery deployment of the refresh job, on 127.0.0.1 only: Postgres instance storage, Redis broker,
N dagster-celery workers (pipeline/ops/cluster.py).

    .venv/bin/python scripts/cluster.py run [--workers 2] [--root .cluster]   # up, one refresh, down
    .venv/bin/python scripts/cluster.py up  [--workers 2] [--root .cluster]   # up until Ctrl-C, then down

Needs Debian's postgresql and redis-server (apt-get install postgresql redis-server) and root or the postgres
user's rights for the machine's cluster. Data goes to ROOT/data (not the project's data/).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.ops.cluster import LocalCluster  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("up", "run"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--root", type=Path, default=Path(".cluster"))
    args = parser.parse_args()
    root = args.root.resolve()
    # SIGINT and SIGTERM only set a flag: `up` (or `run`) finishes what it is doing, then the with-block brings
    # every process it started down
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda _signum, _frame: stop.set())
    with LocalCluster(root=root, data_dir=root / "data", workers=args.workers) as cluster:
        print(f"cluster up: Postgres storage ({cluster.db_name}), Redis {cluster.broker}, {args.workers} workers; "
              f"DAGSTER_HOME={cluster.home}", flush=True)
        if args.action == "run":
            started = time.monotonic()
            result = cluster.run_refresh()
            print(json.dumps({k: v for k, v in result.items() if k != "log"}, indent=1))
            print(f"refresh on {args.workers} Celery workers: {'succeeded' if result['success'] else 'FAILED'} in "
                  f"{time.monotonic() - started:.0f} s; snapshot in {root / 'data' / 'exports' / 'latest'}")
            return 0 if result["success"] else 1
        while not stop.wait(0.5):
            pass
        print("stopping: workers, redis-server and this cluster's database", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
