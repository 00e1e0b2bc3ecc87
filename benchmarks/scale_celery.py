#!/usr/bin/env python3
"""The whole-Hub scale run on Celery workers: the same listing and the same two runs as
``benchmarks/scale.py``, with every step a Celery task on ``--workers`` dagster-celery workers, Postgres instance
storage and a Redis broker (``pipeline.ops.cluster.LocalCluster``, loopback only).

    .venv/bin/python benchmarks/scale_celery.py --models 2000 --workers 2

*Full*: a fresh data directory. *Incremental*: the same directory again with only prices changed (the 14 SkyPilot
catalogs 10% cheaper, observed an hour later, as in ``scale.py``). The price change reaches the workers through
``benchmarks/celery_site/sitecustomize.py`` (on the workers' ``PYTHONPATH`` here only): it wraps the price client
so that it serves the changed catalogs once ``<data dir>/.bench-prices-changed`` exists. Memory: every process of
the deployment (workers and their task processes) is sampled every 0.5 s; the table gives the largest one's peak
and the peak of their sum. Needs Debian's postgresql and redis-server (``.ci/run`` installs them).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
SITE = ROOT / "benchmarks" / "celery_site"


def _rss_mib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _descendants(pids: list[int]) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = set(), list(pids)
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.add(pid)
            todo += children.get(pid, [])
    return out


class Sampler:
    """Peak RSS of the largest process and of all processes under ``roots`` (every 0.5 s)."""

    def __init__(self, roots: list[int]):
        self.roots, self.largest, self.total = roots, 0.0, 0.0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.done.is_set():
            sizes = [_rss_mib(p) for p in _descendants(self.roots)]
            self.largest, self.total = max(self.largest, max(sizes, default=0.0)), max(self.total, sum(sizes))
            self.done.wait(0.5)

    def __enter__(self) -> Sampler:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--work", type=Path, required=True, help="working folder (the listing is built or reused there)")
    args = ap.parse_args()
    from scale import world_env

    from pipeline.ops.cluster import LocalCluster

    os.environ.update(world_env(args.work / "world", args.models))
    os.environ["VRAMLAB_BENCH_SITE"] = "1"

    class BenchCluster(LocalCluster):
        def env(self) -> dict[str, str]:
            env = super().env()
            return env | {"PYTHONPATH": f"{SITE}{os.pathsep}{ROOT / 'benchmarks'}{os.pathsep}{env['PYTHONPATH']}"}

    root = args.work / "celery"
    data = root / "data"
    results = {}
    started = time.monotonic()
    # a database of its own: the suite's Celery test (maybe running for someone else) uses the default one
    with BenchCluster(root=root, data_dir=data, workers=args.workers, db_name="vramlab_scale_bench") as cluster:
        up = time.monotonic() - started
        for kind in ("full", "incremental"):
            if kind == "incremental":
                (data / ".bench-prices-changed").touch()
            load = f"{os.getloadavg()[0]:.1f}"
            with Sampler([p.pid for p in cluster.processes]) as sampler:
                t0 = time.monotonic()
                r = cluster.run_refresh(timeout=7200)
                seconds = time.monotonic() - t0
            results[kind] = {"seconds": seconds, "success": r["success"], "largest_mib": sampler.largest,
                             "total_mib": sampler.total, "steps": r.get("seconds", {}),
                             "load": f"{load}-{os.getloadavg()[0]:.1f}"}
            print(f"<!-- celery {kind}: {seconds:.1f} s, success {r['success']}, largest process "
                  f"{sampler.largest:,.0f} MiB, all {sampler.total:,.0f} MiB -->", flush=True)
            if not r["success"]:
                print(r.get("log", "")[-3000:], file=sys.stderr)
                break
    print(json.dumps({"cluster_up_s": up, "workers": args.workers, "models": args.models, **results}))


if __name__ == "__main__":
    main()
