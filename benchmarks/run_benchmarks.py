#!/usr/bin/env python3
"""Speed and memory of the sizing grid and of a full replay run; prints figures (no timed tests).

    .venv/bin/python benchmarks/run_benchmarks.py > docs/benchmarks.md

Measures, each in a fresh child process (peak RSS from resource.getrusage):
1. the sizing grid for the bundled watchlist on the whole GPU catalog;
2. the sizing grid for a synthetic load of 200 models x 60 GPUs (variants of the bundled architectures);
3. writing the same rows with polars alone (``write_parquet``): the reference the grid is compared to;
4. the full replay run (every asset, ``vramlab run``) into a temporary data directory;
5. CLI start-up (issue #12): wall time of the ``vramlab`` console script for ``size``, ``fit`` and ``gpus`` (median
   of 5, each a fresh process), ``--help`` (parse only) and a real answer, and whether Dagster was imported
   (``python -X importtime``).
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
                               "rc = run_main_job(ephemeral=True)\nprint('PEAK', resource.getrusage(resource.RUSAGE_SELF)"
                               ".ru_maxrss / 1024)\nsys.exit(rc)"], cwd=ROOT, env=env, capture_output=True, text=True)
        elapsed = time.perf_counter() - t0
        peak = next((float(line.split()[1]) for line in proc.stdout.splitlines() if line.startswith("PEAK")), None)
        return {"seconds": elapsed, "peak_mib": peak, "exit": proc.returncode}


STARTUP_COMMANDS = (
    ("size --help", ["size", "--help"]),
    ("fit --help", ["fit", "--help"]),
    ("gpus --help", ["gpus", "--help"]),
    ("size qwen3-8b --json", ["size", "qwen3-8b", "--json"]),
    ("fit qwen3-8b --gpu h100 --format bf16 --json", ["fit", "qwen3-8b", "--gpu", "h100", "--format", "bf16", "--json"]),
    ("gpus h100 --json (latest snapshot)", ["gpus", "h100", "--json"]),
    ("gpus --catalog --json", ["gpus", "--catalog", "--json"]),
)


def cli_startup(repeats: int = 5) -> list[dict]:
    """Median wall time of the console script per command, and whether any ``dagster`` module was imported."""
    script = Path(sys.executable).parent / "vramlab"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    base = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        base.append(time.perf_counter() - t0)
    rows = [{"command": "(python -c pass: the interpreter alone)", "median_s": sorted(base)[len(base) // 2],
             "exit": 0, "dagster_imported": False}]
    for label, args in STARTUP_COMMANDS:
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            proc = subprocess.run([str(script), *args], cwd=ROOT, env=env, capture_output=True, text=True)
            times.append(time.perf_counter() - t0)
        traced = subprocess.run([sys.executable, "-X", "importtime", "-c",
                                 "import sys; from pipeline.cli.main import main; sys.exit(main(sys.argv[1:]))", *args],
                                cwd=ROOT, env=env, capture_output=True, text=True)
        dagster = any(line.split("|")[-1].strip().startswith("dagster") for line in traced.stderr.splitlines()
                      if line.startswith("import time:"))
        rows.append({"command": label, "median_s": sorted(times)[len(times) // 2], "exit": proc.returncode,
                     "dagster_imported": dagster})
    return rows


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
    print("\nCLI start-up (`vramlab` console script, median of 5 fresh processes; goal < 0.3 s for size, fit, gpus; "
          "Dagster must not be imported):\n")
    print("| command | median (s) | exit | Dagster imported |")
    print("|---|---:|---:|---|")
    for r in cli_startup():
        name = r["command"] if r["command"].startswith("(") else f"`vramlab {r['command']}`"
        print(f"| {name} | {r['median_s']:.3f} | {r['exit']} | "
              f"{'yes' if r['dagster_imported'] else 'no'} |")
    run = full_run()
    print(f"\nFull replay run (`vramlab run`, every asset, fresh data directory): {run['seconds']:.1f} s, peak "
          f"{run['peak_mib'] or 0:,.0f} MiB, exit {run['exit']}.")


if __name__ == "__main__":
    main()
