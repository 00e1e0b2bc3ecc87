#!/usr/bin/env python3
"""The whole-Hub scale run: N models discovered from a replayed Hub listing x every catalog GPU.

    .venv/bin/python benchmarks/scale.py --models 2000 --repeat 2          # full + incremental, in-process
    .venv/bin/python benchmarks/scale.py --models 2000 --repeat 1 --celery 2   # ... and on 2 Celery workers

The listing is written by ``benchmarks/hub_world.py`` (the 42 real bundled configs, then generated variants of their
families up to N tracked models; see there). Each run is a fresh child process running the whole asset graph as
``vramlab run`` does (in-process executor), with ``VRAMLAB_DISCOVERY=1`` and the listing replayed through
``VRAMLAB_HUB_REPLAY``. *Full*: a fresh data directory. *Incremental*: the full run's data directory again, with
only prices changed (the 14 SkyPilot catalogs answer 10% cheaper, observed an hour later: the same change as
``run_benchmarks.py``'s graph section); each incremental repetition starts from a copy of the full run's directory.
Times are the best of ``--repeat``; CPU seconds include the setups step's worker processes; peak memory is the
child's maximum RSS (``os.wait4``) and the highest proportional set size of the child and its workers together
(sampled every 0.2 s: forked workers share pages, PSS counts them once); per step: wall seconds and the highest of
both sampled while it ran. Prints Markdown (the figures in docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
PY = sys.executable
STEPS_SHOWN = ("raw_hub__models", "out__sizing", "out__cheapest_setups", "out__exports")


def _rss_mib() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def world_env(world_dir: Path, models: int) -> dict[str, str]:
    """Environment of a run over the replayed listing (the world is built once per folder)."""
    from hub_world import build

    meta = world_dir / "world.json"
    if not meta.exists() or json.loads(meta.read_text())["models"] != models:
        shutil.rmtree(world_dir, ignore_errors=True)
        w = build(world_dir, models)
        meta.write_text(json.dumps({"models": models, "limit": w.limit, "real": len(w.real),
                                    "generated": len(w.generated), "unchanged_configs": w.unchanged_configs,
                                    "families": len(w.families)}))
    info = json.loads(meta.read_text())
    return {"VRAMLAB_DISCOVERY": "1", "VRAMLAB_DISCOVERY_LIMIT": str(info["limit"]),
            "VRAMLAB_DISCOVERY_MIN_DOWNLOADS": "0", "VRAMLAB_HUB_REPLAY": str(world_dir / "manifest.json")}


def _tree_pss_mib() -> float:
    """Proportional set size of this process and every descendant (the setups step's forked workers share pages
    with it: PSS counts a shared page once in all)."""
    total, todo = 0.0, [os.getpid()]
    while todo:
        pid = todo.pop()
        try:
            with open(f"/proc/{pid}/smaps_rollup") as fh:
                total += next(int(line.split()[1]) for line in fh if line.startswith("Pss:")) / 1024
            with open(f"/proc/{pid}/task/{pid}/children") as fh:
                todo += [int(c) for c in fh.read().split()]
        except (OSError, StopIteration, ValueError):
            continue  # the process ended meanwhile
    return total


def child(data_dir: str, second: bool) -> dict:
    """One whole-graph run in this process (the environment says which world)."""
    os.environ["VRAMLAB_DATA_DIR"] = data_dir
    os.environ.pop("VRAMLAB_LIVE", None)
    samples: list[tuple[float, float, float]] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append((time.time(), _rss_mib(), _tree_pss_mib()))
            done.wait(0.2)

    threading.Thread(target=sample, daemon=True).start()
    from run_benchmarks import _changed_prices_client, timed_graph

    if second:
        _changed_prices_client()
    run = timed_graph(data_dir, ("offers_current", "sizing", "cheapest_setups", "models", "placement_cache"))
    done.set()
    steps = {step: [b - a, max((m for t, m, _ in samples if a <= t <= b), default=0.0),
                    max((m for t, _, m in samples if a <= t <= b), default=0.0)]
             for step, (a, b) in run["spans"].items()}
    numbers = run["numbers"]
    return {"success": run["success"], "seconds": run["seconds"], "cpu_seconds": run["cpu_seconds"], "steps": steps,
            "pss_peak": max((m for _, _, m in samples), default=0.0),
            "counts": run["counts"], "sizing": numbers.get("out__sizing", {}),
            "setups": numbers.get("out__cheapest_setups", {}), "exports": numbers.get("out__exports", {}),
            "hub": numbers.get("raw_hub__models", {})}


def measured(cmd: list[str], env: dict[str, str]) -> tuple[dict, float]:
    """(the child's JSON, peak RSS MiB) of one child process."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=os.environ | env, cwd=ROOT)
    out_chunks: list[bytes] = []
    err_chunks: list[bytes] = []
    readers = [threading.Thread(target=lambda s, b: b.append(s.read()), args=(proc.stdout, out_chunks)),
               threading.Thread(target=lambda s, b: b.append(s.read()), args=(proc.stderr, err_chunks))]
    for r in readers:
        r.start()
    _, status, usage = os.wait4(proc.pid, 0)
    for r in readers:
        r.join()
    if status != 0:
        raise RuntimeError(f"{cmd[-3:]} failed:\n{b''.join(err_chunks).decode()[-3000:]}")
    return json.loads(b"".join(out_chunks).decode().strip().splitlines()[-1]), usage.ru_maxrss / 1024


def load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=int, default=2000, help="tracked models: watchlist + discovered (default 2000)")
    ap.add_argument("--repeat", type=int, default=2, help="runs per case; the best is reported (default 2)")
    ap.add_argument("--work", type=Path, help="working folder (default: a temporary one, removed at the end)")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1] == "1")))
        return
    work = args.work or Path(tempfile.mkdtemp(prefix="vramlab-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    env = world_env(work / "world", args.models)
    info = json.loads((work / "world" / "world.json").read_text())
    results: dict[str, tuple[dict, float, str]] = {}
    full_dir = work / "full"  # the first full run's data directory, where every incremental run starts from
    shutil.rmtree(full_dir, ignore_errors=True)
    for kind in ("full", "incremental"):
        for _ in range(args.repeat):
            d = work / "run"
            shutil.rmtree(d, ignore_errors=True)
            if kind == "incremental":
                shutil.copytree(full_dir, d, symlinks=True)
            else:
                d.mkdir()
            before = load()
            r, peak = measured([PY, str(Path(__file__).resolve()), "--child", str(d), "1" if kind != "full" else "0"],
                               env)
            r["load"] = f"{before}-{load()}"
            if not r["success"]:
                raise SystemExit(f"{kind} run failed")
            if kind not in results or r["seconds"] < results[kind][0]["seconds"]:
                results[kind] = (r, peak, r["load"])
            if kind == "full" and not full_dir.exists():
                shutil.copytree(d, full_dir, symlinks=True)
            print(f"<!-- {kind}: {r['seconds']:.1f} s, peak {peak:,.0f} MiB, load {r['load']} -->", flush=True)
    report(args.models, info, results)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


def report(models: int, info: dict, results: dict[str, tuple[dict, float, str]]) -> None:
    import platform

    print(f"\nMeasured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()}, "
          f"{os.cpu_count()} cores, Python {platform.python_version()}: `benchmarks/scale.py --models {models}`. "
          f"{info['real']} real bundled repos and {info['generated']} generated ones from {info['families']} real "
          f"families ({info['unchanged_configs']} kept unvaried); every catalog GPU.\n")
    print("| run | wall (s) | CPU (s) | peak: largest process / all processes (MiB) | models | sizing rows computed / total | placements computed / "
          "re-used | model files sized / re-used | setups | " + " | ".join(f"{s} s / MiB / all MiB" for s in STEPS_SHOWN)
          + " | load |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|" + "---:|" * len(STEPS_SHOWN) + "---|")
    for kind, (r, peak, ld) in results.items():
        sz, st, ex = r["sizing"], r["setups"], r["exports"]
        steps = " | ".join("{:.1f} / {:,.0f} / {:,.0f}".format(*r["steps"].get(s, [0, 0, 0])) for s in STEPS_SHOWN)
        print(f"| {kind} | {r['seconds']:.1f} | {r['cpu_seconds']:.1f} | {peak:,.0f} / {r['pss_peak']:,.0f} | "
              f"{r['counts']['models']:,} | "
              f"{sz.get('rows_computed', 0):,} / {sz.get('dagster/row_count', 0):,} | "
              f"{st.get('placements_computed', 0):,} / {st.get('placements_reused', 0):,} | "
              f"{ex.get('model_files_sized', 0):,} / {ex.get('model_files_reused', 0):,} | "
              f"{r['counts']['cheapest_setups']:,} | {steps} | {ld} |")
    full, inc = results.get("full"), results.get("incremental")
    print()
    if full:
        print(f"- full run under 10 minutes: {full[0]['seconds']:.0f} s — "
              f"{'**holds**' if full[0]['seconds'] < 600 else '**does not hold**'}")
    if inc:
        print(f"- incremental run under 2 minutes: {inc[0]['seconds']:.0f} s — "
              f"{'**holds**' if inc[0]['seconds'] < 120 else '**does not hold**'}")
    # the largest process's exact peak (wait4) or, with the setups step's workers, all processes' (PSS, sampled)
    peak = max(max(p, r["pss_peak"]) for r, p, _ in results.values())
    print(f"- peak memory under 3 GiB: {peak:,.0f} MiB — {'**holds**' if peak < 3072 else '**does not hold**'}")


if __name__ == "__main__":
    main()
