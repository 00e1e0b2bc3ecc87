#!/usr/bin/env python3
"""Speed and memory of the sizing grid and of a full replay run; prints figures (no timed tests).

    .venv/bin/python benchmarks/run_benchmarks.py > docs/benchmarks.md

Measures, each in a fresh child process (peak RSS from resource.getrusage):
1. the sizing grid for the bundled watchlist on the whole GPU catalog;
2. the sizing grid for a synthetic load of 200 models x 60 GPUs (variants of the bundled architectures);
3. writing the same rows with polars alone (``write_parquet``): the reference the grid is compared to;
4. the full replay run (every asset, ``vramlab run``) into a temporary data directory;
5. rebuilding the static report (``pipeline/report``) of that run's snapshot, every model page included.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r'''
import json, resource, sys, time, tempfile, glob
from pathlib import Path
import polars as pl
sys.path.insert(0, sys.argv[2])
from pipeline.compute.grid import compute_grid
from pipeline.cli.models import load_model
from sizing_core.gpus import catalog
from sizing_core.registry import load_registered
from sizing_core import parse_config

case = sys.argv[1]
configs = [p for p in sorted(glob.glob(sys.argv[2] + "/pipeline/replay/hub/configs/*.json")) if "hf_quant" not in p]
base = {Path(p).stem: load_model(p) for p in configs}
base["kimi-k3.1-pro"] = load_registered("kimi-k3.1-pro")[1]
gpus = list(catalog().values())
if case == "watchlist":
    models = {k: ("r", v) for k, v in base.items()}
else:  # 200 models x 60 GPUs: each bundled architecture at several depths
    raw = {Path(p).stem: json.loads(Path(p).read_text()) for p in configs}
    models, i = {}, 0
    while len(models) < 200:
        name, cfg = list(raw.items())[i % len(raw)]
        models[f"{name}-v{i}"] = ("r", load_model(configs[i % len(configs)]))
        i += 1
    gpus = gpus[:60]
t0 = time.perf_counter()
grid = compute_grid(models, gpus)
t_grid = time.perf_counter() - t0
with tempfile.TemporaryDirectory() as d:
    t1 = time.perf_counter()
    grid.write_parquet(Path(d) / "grid.parquet")
    t_write = time.perf_counter() - t1
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"case": case, "models": len(models), "gpus": len(gpus), "rows": grid.height,
                  "grid_s": t_grid, "polars_write_s": t_write, "peak_mib": peak}))
'''


def child(case: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, case, str(ROOT)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def full_run() -> dict:
    with tempfile.TemporaryDirectory() as d:
        env = {**os.environ, "VRAMLAB_DATA_DIR": d}
        env.pop("DAGSTER_HOME", None)
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", "import resource, sys\nfrom pipeline.cli.run import run_main_job\n"
                               "rc = run_main_job()\nprint('PEAK', resource.getrusage(resource.RUSAGE_SELF)"
                               ".ru_maxrss / 1024)\nsys.exit(rc)"], cwd=ROOT, env=env, capture_output=True, text=True)
        elapsed = time.perf_counter() - t0
        peak = next((float(line.split()[1]) for line in proc.stdout.splitlines() if line.startswith("PEAK")), None)
        return {"seconds": elapsed, "peak_mib": peak, "exit": proc.returncode,
                "report": report_build(Path(d) / "exports" / "latest")}


REPORT = r'''
import json, resource, sys, tempfile, time
from pathlib import Path
from pipeline.report import render_report
snapshot = Path(sys.argv[1]).resolve()
with tempfile.TemporaryDirectory() as d:
    t0 = time.perf_counter()
    out = render_report(snapshot, out=Path(d) / "report", lang="en")
    seconds = time.perf_counter() - t0
    pages = len(list(out.rglob("*.html")))
print(json.dumps({"seconds": seconds, "pages": pages, "models": len(list((snapshot / "models").glob("*.json"))),
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
'''


def report_build(snapshot: Path) -> dict | None:
    """Time rendering the report of a published snapshot (index, model pages, price board) in a child process."""
    if not snapshot.exists():
        return None
    out = subprocess.run([sys.executable, "-c", REPORT, str(snapshot)], cwd=ROOT, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    print("# Benchmarks\n")
    print(f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()} (`benchmarks/run_benchmarks.py`; figures vary with the machine — compare the "
          "ratios).\n")
    print("| case | models | GPUs | rows | grid (s) | rows/s | polars-only write of the same rows (s) | "
          "grid / write | peak memory (MiB) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for case in ("watchlist", "synthetic"):
        r = child(case)
        print(f"| {case} | {r['models']} | {r['gpus']} | {r['rows']:,} | {r['grid_s']:.2f} | "
              f"{r['rows'] / r['grid_s']:,.0f} | {r['polars_write_s']:.2f} | {r['grid_s'] / r['polars_write_s']:.1f}x | "
              f"{r['peak_mib']:,.0f} |")
    run = full_run()
    print(f"\nFull replay run (`vramlab run`, every asset, fresh data directory): {run['seconds']:.1f} s, peak "
          f"{run['peak_mib'] or 0:,.0f} MiB, exit {run['exit']}.")
    if run["report"]:
        r = run["report"]
        print(f"\nStatic report of that snapshot ({r['models']} models, {r['pages']} pages): {r['seconds']:.2f} s, "
              f"peak {r['peak_mib']:,.0f} MiB (goal: under 10 s for 43 models).")


if __name__ == "__main__":
    main()
