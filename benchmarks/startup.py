#!/usr/bin/env python3
"""CLI start-up of ``vramlab size``, ``fit`` and ``gpus``: the whole answer under 0.3 s, no Dagster import.

    .venv/bin/python benchmarks/startup.py                    # 7 runs per command, Markdown on stdout
    .venv/bin/python benchmarks/startup.py --runs 15 --data-dir data

"Start-up" is read as the whole command answering, interpreter start included: each figure is the median wall time
of ``--runs`` runs of the real console script (``vramlab`` next to this Python) in a fresh process, after one
warm-up run. Commands run against the tree this script lives in (``PYTHONPATH``), with Python's bytecode cache
allowed (an installed package has its ``.pyc`` files; with ``PYTHONDONTWRITEBYTECODE=1`` and no ``__pycache__``
every run compiles the project's own modules from source again, ~0.1-0.2 s more). ``fit`` and ``gpus`` need a published
snapshot: ``--data-dir``, else ``$VRAMLAB_DATA_DIR`` or ``data/`` when they hold one, else one offline replay run
(``vramlab run --ephemeral``) into a temporary directory first. The CLI keeps a snapshot's offers as JSON in
``<data dir>/cache/cli/`` (``pipeline/exports/snapshot_offers.py``): a run writes it for the snapshot it publishes, a command
writes it on first read otherwise. The "no offers cache" rows delete it before every run, i.e. they measure the
first command on a snapshot that came without it (copied from elsewhere, or a read-only data directory).

The machine may be shared: the load average is printed before and after, with CPU seconds (user + system) of the
same runs, which move less with load than wall time. Nothing here is a test.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
VRAMLAB = str(Path(PY).parent / "vramlab")
GOAL_S = 0.3
#: prints whether a command imported Dagster (the issue: none of size, fit, gpus may)
DAGSTER_PROBE = ("import sys\nfrom pipeline.cli.main import main\nimport contextlib, io\n"
                 "with contextlib.redirect_stdout(io.StringIO()):\n    main(sys.argv[1:])\n"
                 "print('dagster' in sys.modules, file=sys.stderr)")


def env_for(data_dir: Path, bytecode: bool = True) -> dict[str, str]:
    env = os.environ.copy()
    env["PYTHONPATH"] = str(ROOT)
    env["VRAMLAB_DATA_DIR"] = str(data_dir)
    env["COLUMNS"] = "100"
    env.pop("VRAMLAB_LIVE", None)
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run; raises when the command fails."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode() if proc.stderr else ""
    if status != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def imports_dagster(args: list[str], env: dict[str, str]) -> bool:
    out = subprocess.run([PY, "-c", DAGSTER_PROBE, *args], capture_output=True, text=True, env=env, cwd=ROOT)
    if out.returncode != 0:
        raise RuntimeError(f"vramlab {' '.join(args)} failed: {out.stderr[-2000:]}")
    return out.stderr.strip().splitlines()[-1] == "True"


def has_snapshot(data_dir: Path) -> bool:
    from pipeline.data_dir import DataDir

    return (DataDir(data_dir).latest / "offers_current.parquet").is_file()


def find_data_dir(given: str | None, scratch: Path) -> tuple[Path, str]:
    if given:
        path = Path(given)
        if not has_snapshot(path):
            sys.exit(f"{path} holds no published snapshot (exports/latest): run `vramlab run --data-dir {path}`")
        return path, f"snapshot in {path}"
    for candidate in (os.environ.get("VRAMLAB_DATA_DIR"), str(ROOT / "data")):
        if candidate and has_snapshot(Path(candidate)):
            return Path(candidate), f"snapshot in {candidate}"
    data = scratch / "data"
    t0 = time.perf_counter()
    env = env_for(data)
    subprocess.run([VRAMLAB, "run", "--ephemeral", "--quiet", "--data-dir", str(data)], check=True, env=env,
                   cwd=ROOT, stdout=subprocess.DEVNULL)
    return data, f"snapshot from one offline replay run made for this benchmark ({time.perf_counter() - t0:.0f} s)"


CASES: tuple[tuple[str, list[str], bool], ...] = (
    # (label, vramlab arguments, counts for the goal)
    ("vramlab size --help", ["size", "--help"], False),
    ("vramlab size qwen3-8b --json", ["size", "qwen3-8b", "--json"], True),
    ("vramlab size qwen3-8b (tables)", ["size", "qwen3-8b"], True),
    ("vramlab fit qwen3-8b --gpu h100 --format fp8 --json", ["fit", "qwen3-8b", "--gpu", "h100", "--format", "fp8",
                                                              "--json"], True),
    ("vramlab fit qwen3-8b --gpu h100 --json (every format)", ["fit", "qwen3-8b", "--gpu", "h100", "--json"], True),
    ("vramlab size <Llama-3.1-8B config.json path> --json",
     ["size", str(ROOT / "pipeline/replay/hub/configs/meta-llama__Llama-3.1-8B.json"), "--json"], True),
    ("vramlab fit kimi-k3.1-pro (a bundled spec) --gpu h100 --format fp8 --json",
     ["fit", "kimi-k3.1-pro", "--gpu", "h100", "--format", "fp8", "--json"], True),
    ("vramlab gpus h100 --json", ["gpus", "h100", "--json"], True),
    ("vramlab gpus (table)", ["gpus"], True),
    ("vramlab gpus h100 --json, no offers cache (reads the Parquet file)", ["gpus", "h100", "--json"], True),
    ("vramlab fit qwen3-8b --gpu h100 --format fp8 --json, no offers cache (reads the Parquet file)",
     ["fit", "qwen3-8b", "--gpu", "h100", "--format", "fp8", "--json"], True),
)
#: `cheapest` for a model the snapshot does not publish: an untracked Hub repo (looked up once, in the
#: warm-up, then read from the data directory's look-up cache), sized and planned on the snapshot's offers
CHEAPEST_GOAL_S = 2.0
CHEAPEST_CASES: tuple[tuple[str, list[str]], ...] = (
    ("vramlab cheapest meta-llama/Llama-3.3-70B-Instruct --context 32k --concurrency 8 --json (untracked)",
     ["cheapest", "meta-llama/Llama-3.3-70B-Instruct", "--context", "32k", "--concurrency", "8", "--json"]),
    ("vramlab cheapest openai/gpt-oss-120b --sort per-token --json (untracked)",
     ["cheapest", "openai/gpt-oss-120b", "--sort", "per-token", "--json"]),
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=7, help="timed runs per command, after one warm-up (default 7)")
    ap.add_argument("--data-dir", default=None, help="a data directory with a published snapshot")
    args = ap.parse_args(argv)
    from pipeline.data_dir import DataDir

    with tempfile.TemporaryDirectory(prefix="vramlab-startup-") as tmp:
        data_dir, origin = find_data_dir(args.data_dir, Path(tmp))
        env = env_for(data_dir)
        load_before = os.getloadavg()
        rows = []
        for label, cli_args, goal in [*CASES, *((label, cli_args, None) for label, cli_args in CHEAPEST_CASES)]:
            cmd = [VRAMLAB, *cli_args]
            cold = "no offers cache" in label
            timed(cmd, env)  # warm-up: writes the bytecode cache, fills the page cache
            runs = []
            for _ in range(args.runs):
                if cold:  # the command reads the Parquet file and writes the offers cache
                    shutil.rmtree(DataDir(data_dir).cli_cache, ignore_errors=True)
                runs.append(timed(cmd, env))
            dagster = imports_dagster(cli_args, env) if goal is not False else None
            rows.append((label, runs, goal, dagster))
        reference = []
        for label, cmd, renv in (
                ("python -c pass (interpreter alone)", [PY, "-c", "pass"], env),
                ("python + pydantic, one model validated and dumped (the floor of any pydantic answer)",
                 [PY, "-c", "from pydantic import BaseModel, Field\nclass A(BaseModel):\n    x: int = Field(gt=0)\n"
                            "A(x=1).model_dump(mode='json')"], env | {"PYDANTIC_DISABLE_PLUGINS": "__all__"})):
            timed(cmd, renv)
            reference.append((label, [timed(cmd, renv) for _ in range(args.runs)]))
        load_after = os.getloadavg()

    print("## CLI start-up (`benchmarks/startup.py`)\n")
    print(f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()}, "
          f"{os.cpu_count()} cores, Python {platform.python_version()}; load average {load_before[0]:.2f} before, "
          f"{load_after[0]:.2f} after. Whole command, interpreter included: median (and best) of {args.runs} runs "
          f"of the console script after one warm-up, bytecode cache allowed; CPU = user + system seconds "
          f"(median). Data: {origin}.\n")
    print("| command | median (s) | best (s) | CPU (s) | Dagster imported |")
    print("|---|---:|---:|---:|---|")
    checks, cheapest = [], []
    for label, runs, goal, dagster in rows:
        wall = statistics.median(w for w, _ in runs)
        print(f"| `{label}` | {wall:.3f} | {min(w for w, _ in runs):.3f} | "
              f"{statistics.median(c for _, c in runs):.3f} | {'-' if dagster is None else 'yes' if dagster else 'no'} |")
        if goal:
            checks.append((label, wall, dagster))
        elif goal is None:
            cheapest.append((label, wall))
    for label, runs in reference:
        print(f"| {label} | {statistics.median(w for w, _ in runs):.3f} | {min(w for w, _ in runs):.3f} | "
              f"{statistics.median(c for _, c in runs):.3f} | - |")
    print(f"\nGoal: size, fit and gpus answer in under {GOAL_S} s (median) without importing Dagster.\n")
    for label, wall, dagster in checks:
        holds = wall < GOAL_S and not dagster
        print(f"- `{label}`: {wall:.3f} s, Dagster {'imported' if dagster else 'not imported'} — "
              f"**{'holds' if holds else 'does not hold'}**")
    print(f"\nGoal: `cheapest` prices any model on the snapshot's offers in under {CHEAPEST_GOAL_S:g} s.\n")
    for label, wall in cheapest:
        print(f"- `{label}`: {wall:.3f} s — **{'holds' if wall < CHEAPEST_GOAL_S else 'does not hold'}**")
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
