#!/usr/bin/env python3
"""Speed and memory of vramlab, printed as a Markdown report with ratios and the acceptance checks of its goals.

    .venv/bin/python benchmarks/run_benchmarks.py > /tmp/benchmarks.md     # everything (~5-10 min on 2 cores)
    .venv/bin/python benchmarks/run_benchmarks.py --quick                  # one repetition, no synthetic graph
    .venv/bin/python benchmarks/run_benchmarks.py --grid-only --repeat 5   # the grid cases only, best and median
    .venv/bin/python benchmarks/run_benchmarks.py --only graph --graph-case watchlist --repeat 1   # one graph case

Every case runs in a fresh child process; its peak memory is that process's maximum resident set size
(``os.wait4``), its time the best of ``--repeat`` runs (the machine is shared: the best run is the one least
disturbed). Cases:

1. the sizing grid vs writing the same rows with polars alone (``write_parquet``), for the bundled watchlist on
   the whole GPU catalog and for a synthetic 200 models x 60 GPUs;
2. the whole asset graph on replay (fresh data directory, in-process executor as ``vramlab run``), for the
   watchlist and for a synthetic 200-model x 60-GPU watchlist; then the same recordings again (a run in which
   nothing changed: goal at most 20% of the full run) and a run of the same graph in which only prices changed
   (the 14 SkyPilot catalogs answer 10% cheaper, observed an hour later);
3. fetching every price source with a simulated 1 s latency per request (replay transport with a delay, live
   client settings: 0.5 s per-host spacing, retries), concurrently as the raw layer does, vs the sum of the
   latencies (what fetching one after another costs) and vs the slowest single source;
4. start-up of ``vramlab size`` and ``vramlab fit`` (whole command, interpreter start included).

Nothing here is a test: the figures depend on the machine and its load; the acceptance lines say whether the
goals hold on this run. Do not redirect the output onto docs/benchmarks.md (it holds hand-written sections too):
paste it, without its first line and with its headings one level down (``| sed '1d; s/^## /### /'``), between
that file's ``run_benchmarks.py output`` markers, and update its goals table.
"""

from __future__ import annotations

import argparse
import json
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
MIB = 1024 * 1024

# ------------------------------------------------------------------------------------------------- child cases


def _synthetic_models(n: int) -> dict:
    """``n`` models cycling through the bundled architectures (each a distinct model id)."""
    from pipeline.cli.models import load_model

    configs = sorted(p for p in (ROOT / "pipeline/replay/hub/configs").glob("*.json")
                     if not p.name.endswith(".hf_quant_config.json"))
    base = [load_model(str(p)) for p in configs]
    return {f"{configs[i % len(configs)].stem}-v{i}": ("r", base[i % len(base)]) for i in range(n)}


def child_grid(case: str, repeat: int) -> dict:
    import polars as pl  # noqa: F401 - imported before timing

    from pipeline.cli.models import load_model
    from pipeline.compute.grid import compute_grid
    from sizing_core.gpus import catalog
    from sizing_core.registry import load_registered

    gpus = list(catalog().values())
    if case == "watchlist":
        configs = sorted(p for p in (ROOT / "pipeline/replay/hub/configs").glob("*.json")
                         if not p.name.endswith(".hf_quant_config.json"))
        models = {p.stem: ("r", load_model(str(p))) for p in configs}
        models["kimi-k3.1-pro"] = ("r", load_registered("kimi-k3.1-pro")[1])
    else:
        models, gpus = _synthetic_models(200), gpus[:60]
    grid_s, write_s = [], []
    grid = None
    with tempfile.TemporaryDirectory() as d:
        for _ in range(repeat):
            t0 = time.perf_counter()
            grid = compute_grid(models, gpus)
            grid_s.append(time.perf_counter() - t0)
            t1 = time.perf_counter()
            grid.write_parquet(Path(d) / "grid.parquet")
            write_s.append(time.perf_counter() - t1)
    return {"case": case, "models": len(models), "gpus": len(gpus), "rows": grid.height, "grid_s": min(grid_s),
            "write_s": min(write_s), "grid_median_s": statistics.median(grid_s),
            "write_median_s": statistics.median(write_s)}


def _patch_world(data_dir: Path, models: int | None, gpus: int | None) -> None:
    """Synthetic sizes without touching the repository: a watchlist of ``models`` entries (the bundled ones
    repeated under new ids, so the Hub replay serves them) and the first ``gpus`` GPUs of the catalog."""
    if models:
        from pipeline.sources import huggingface

        wl = huggingface.load_watchlist()
        entries = [wl.models[i % len(wl.models)].model_copy(update={"id": f"{wl.models[i % len(wl.models)].id}-v{i}"})
                   if i >= len(wl.models) else wl.models[i] for i in range(models)]
        path = data_dir / "synthetic_watchlist.json"
        path.write_text(wl.model_copy(update={"models": entries}).model_dump_json())
        huggingface.load_watchlist.__defaults__ = (path,)
    if gpus:  # a world that knows only these GPUs: the catalog and the provider name map (offers of other GPUs
        # are unmapped, as a GPU missing from the catalog is live; the map refuses rows naming unknown GPUs)
        import csv

        import sizing_core.gpus as g
        from pipeline.sources import gpu_names

        parse = g.parse_catalog
        g.parse_catalog = lambda text: dict(list(parse(text).items())[:gpus])
        g.catalog.cache_clear()
        known = set(g.catalog())
        assert len(known) == gpus, "the GPU catalog was parsed before the patch"
        with gpu_names.MAP_PATH.open() as fh:
            reader = csv.DictReader(fh)
            kept = [r for r in reader if r["gpu_id"] in known]
            fields = reader.fieldnames
        path = data_dir / "synthetic_gpu_map.csv"
        with path.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=fields)
            writer.writeheader()
            writer.writerows(kept)
        gpu_names.MAP_PATH = path
        gpu_names.rows.cache_clear()


def _changed_prices_client():  # type: ignore[no-untyped-def]
    """``client_for`` whose SkyPilot catalogs answer 10% cheaper, observed one hour after the recording."""
    import csv
    import io
    from datetime import timedelta

    import httpx

    from pipeline.ingest import prices
    from pipeline.settings import REPLAY_SNAPSHOT_AT
    from pipeline.sources.http import make_client
    from pipeline.sources.replay import REPLAY_ROOT, ReplayTransport

    overrides = {}
    for e in ReplayTransport().manifest:
        if not e["source"].startswith("skypilot"):
            continue
        rows = list(csv.DictReader(io.StringIO((REPLAY_ROOT / "prices" / e["file"]).read_text())))
        for row in rows:
            for col in ("Price", "SpotPrice"):
                if row.get(col):
                    row[col] = f"{float(row[col]) * 0.9:.4f}"
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
        overrides[e["url"]] = httpx.Response(200, content=out.getvalue().encode(), headers={
            "content-type": "text/csv", "x-vramlab-observed-at": (REPLAY_SNAPSHOT_AT + timedelta(hours=1)).isoformat()})

    def client_for(replay, fail_sources=(), gate=None, step=""):  # type: ignore[no-untyped-def]
        return make_client(ReplayTransport(overrides=dict(overrides)), sleep=lambda _s: None, min_interval=0.0,
                           gate=gate)

    prices.client_for = client_for
    import pipeline.assets.raw as raw

    raw.client_for = client_for


def _cpu_seconds() -> float:
    """CPU seconds of this process and of its finished child processes (the setups step's workers)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def timed_graph(data_dir: str, tables: tuple[str, ...] = ("offers_current", "sizing", "cheapest_setups", "models")
                ) -> dict:
    """The whole asset graph once in this process, as ``vramlab run`` runs it (in-process executor): wall and CPU
    seconds, each step's (start, end) times, each asset's numeric metadata, the out__exports snapshot and the row
    counts of ``tables`` afterwards."""
    import dagster as dg
    import duckdb

    from pipeline.definitions import ALL_ASSETS
    from pipeline.resources import default_resources

    instance = dg.DagsterInstance.ephemeral()
    quiet = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}
    t0, cpu0 = time.perf_counter(), _cpu_seconds()
    result = dg.materialize(ALL_ASSETS, instance=instance, resources=default_resources(), raise_on_error=False,
                            run_config=quiet)
    seconds, cpu = time.perf_counter() - t0, _cpu_seconds() - cpu0
    starts: dict[str, float] = {}
    spans: dict[str, tuple[float, float]] = {}
    for record in instance.all_logs(result.run_id):
        ev = record.dagster_event
        if ev and ev.step_key and ev.event_type_value == "STEP_START":
            starts[ev.step_key] = record.timestamp
        elif ev and ev.step_key and ev.event_type_value in ("STEP_SUCCESS", "STEP_FAILURE"):
            spans[ev.step_key] = (starts.get(ev.step_key, record.timestamp), record.timestamp)
    numbers: dict[str, dict] = {}
    snapshot = None
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        numbers[mat.asset_key.to_user_string()] = {k: getattr(v, "value", v) for k, v in mat.metadata.items()
                                                   if isinstance(getattr(v, "value", None), int | float)}
        if mat.asset_key.to_user_string() == "out__exports":
            snapshot = str(mat.metadata["snapshot"].value)
    from pipeline.data_dir import DataDir

    con = duckdb.connect(str(DataDir(Path(data_dir)).database), read_only=True)
    counts = {t: con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in tables}
    con.close()
    return {"success": result.success, "seconds": seconds, "cpu_seconds": cpu, "spans": spans, "numbers": numbers,
            "snapshot": snapshot, "counts": counts}


def child_graph(data_dir: str, models: int | None, gpus: int | None, prices_changed: bool) -> dict:
    os.environ["VRAMLAB_DATA_DIR"] = data_dir
    os.environ.pop("VRAMLAB_LIVE", None)
    _patch_world(Path(data_dir), models, gpus)
    if prices_changed:
        _changed_prices_client()
    run = timed_graph(data_dir)
    numbers = run["numbers"]
    return {"success": run["success"], "seconds": run["seconds"], "cpu_seconds": run["cpu_seconds"],
            "steps": {step: b - a for step, (a, b) in run["spans"].items()}, "sizing": numbers.get("out__sizing", {}),
            "counts": run["counts"], "setups": numbers.get("out__cheapest_setups", {}),
            "exports": numbers.get("out__exports", {}), "snapshot": run["snapshot"]}


def child_report(snapshot: str, repeat: int) -> dict:
    """The HTML report rendered from a published snapshot into a fresh folder, as ``vramlab report`` does."""
    from pipeline.report import render_report

    best = 1e9
    pages = 0
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as d:
            t0 = time.perf_counter()
            out = render_report(Path(snapshot), out=Path(d) / "report", lang="en")
            best = min(best, time.perf_counter() - t0)
            pages = sum(1 for _ in out.rglob("*.html"))
    models = len(json.loads((Path(snapshot) / "index.json").read_text())["models"])
    return {"seconds": best, "pages": pages, "models": models}


def child_fetch(latency: float) -> dict:
    import httpx

    from pipeline.ingest.prices import fetch_concurrently, latest_rates
    from pipeline.sources import CURRENCY_SOURCE, PRICE_SOURCES
    from pipeline.sources.http import make_client
    from pipeline.sources.landing import run_source
    from pipeline.sources.replay import ReplayTransport

    class Delayed(httpx.BaseTransport):
        """The recordings, each answered after ``latency`` seconds (what a remote API costs)."""

        def __init__(self) -> None:
            self.inner = ReplayTransport()

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            time.sleep(latency)
            return self.inner.handle_request(request)

    requests = {}
    for e in ReplayTransport().manifest:
        requests[e["source"]] = requests.get(e["source"], 0) + 1
    with tempfile.TemporaryDirectory() as d:
        data = Path(d)
        t0 = time.perf_counter()
        with make_client(Delayed()) as client:  # live settings: 0.5 s per host, retries, real sleeps
            run_source(CURRENCY_SOURCE, client, data, replay=True)
        rates = latest_rates(data)
        results = fetch_concurrently(list(PRICE_SOURCES.values()), data, rates, replay=True,
                                     client_factory=lambda gate: make_client(Delayed(), gate=gate))
        wall = time.perf_counter() - t0
    per_source = {s: n * latency for s, n in requests.items()}
    return {"wall_s": wall, "sum_s": sum(per_source.values()), "slowest_s": max(per_source.values()),
            "slowest": max(per_source, key=per_source.get), "requests": sum(requests.values()),
            "sources": len(results) + 1, "ok": sum(e.outcome in ("ok", "partial") for e, _ in results)}


# ------------------------------------------------------------------------------------------------- the parent


def run_child(args: list[str], env: dict | None = None) -> tuple[dict, float, float]:
    """(the child's JSON, wall seconds, peak RSS MiB) of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([PY, str(Path(__file__).resolve()), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env or os.environ.copy(), cwd=ROOT)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    out, err = proc.stdout.read().decode(), proc.stderr.read().decode()
    if status != 0:
        raise RuntimeError(f"child {args} failed:\n{err[-3000:]}")
    return json.loads(out.strip().splitlines()[-1]), wall, usage.ru_maxrss / 1024


def command_time(cmd: list[str], repeat: int) -> tuple[float, float]:
    """Best wall time and peak RSS of ``repeat`` runs after one warm-up, with the bytecode cache allowed as an
    installed package has it (with ``PYTHONDONTWRITEBYTECODE=1`` inherited and no ``__pycache__`` yet, as on a
    fresh checkout in this sandbox, every run recompiled the package: ~0.1 s more, not start-up)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, env=env, check=True)
    best, peak = 1e9, 0.0
    for _ in range(repeat):
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        best = min(best, time.perf_counter() - t0)
        peak = max(peak, usage.ru_maxrss / 1024)
        if status != 0:
            raise RuntimeError(f"{cmd} failed")
    return best, peak


def load_now() -> str:
    """The 1-minute load average now (the machine may be shared: every figure carries it)."""
    return f"{os.getloadavg()[0]:.1f}"


def ok(flag: bool) -> str:
    return "**holds**" if flag else "**does not hold**"


#: what ``--only`` may name
SECTIONS = ("grid", "graph", "report", "fetch", "startup")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3, help="runs per case; the best is reported (default 3)")
    ap.add_argument("--quick", action="store_true", help="one repetition, no synthetic whole-graph runs")
    ap.add_argument("--only", default=",".join(SECTIONS), metavar="SECTIONS",
                    help=f"comma-separated sections to run, of {','.join(SECTIONS)} (default: all; the acceptance "
                         "list then covers only what ran)")
    ap.add_argument("--graph-case", action="append", choices=("watchlist", "synthetic"),
                    help="whole-graph cases to run (repeatable; default: both, or the watchlist with --quick)")
    ap.add_argument("--grid-only", action="store_true",
                    help="only the grid vs polars-write cases, with the median of --repeat runs as well")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args()
    only = {"grid"} if args.grid_only else set(args.only.split(","))
    if only - set(SECTIONS):
        ap.error(f"unknown sections: {', '.join(sorted(only - set(SECTIONS)))}")
    if args.child:
        sys.path.insert(0, str(ROOT))
        kind, *rest = args.child
        if kind == "grid":
            out = child_grid(rest[0], int(rest[1]))
        elif kind == "graph":
            out = child_graph(rest[0], int(rest[1]) or None, int(rest[2]) or None, rest[3] == "1")
        elif kind == "report":
            out = child_report(rest[0], int(rest[1]))
        else:
            out = child_fetch(float(rest[0]))
        print(json.dumps(out))
        return
    repeat = 1 if args.quick else args.repeat
    load = os.getloadavg()
    print("# Benchmarks\n")
    print(f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()}, "
          f"{os.cpu_count()} cores (load average {load[0]:.1f} at the start), Python {platform.python_version()}, "
          f"by `benchmarks/run_benchmarks.py`{' --quick' if args.quick else ''}. Each figure is the best of "
          f"{repeat} run(s) in a fresh process; peak memory is that process's maximum RSS. The machine is shared, "
          "so absolute times move with its load: compare the ratios.\n")
    checks: list[tuple[str, bool, str]] = []

    # 1. grid vs polars-only write
    if "grid" in only:
        grid_section(repeat, checks)
    report_snapshot = graph_section(args, repeat, checks, only) if only & {"graph", "report"} else None
    if "report" in only:
        report_section(report_snapshot, repeat, checks)
    if "fetch" in only:
        fetch_section(checks)
    if "startup" in only:
        startup_section(repeat, checks)
    if report_snapshot is not None:
        shutil.rmtree(Path(report_snapshot).parent, ignore_errors=True)

    print(f"\n## Acceptance on this run (load average at the end {load_now()})\n")
    for name, passed, figure in checks:
        print(f"- {name}: {figure} — {ok(passed)}")


def grid_section(repeat: int, checks: list[tuple[str, bool, str]]) -> None:
    print("## Sizing grid vs a polars-only write of the same rows\n")
    print("| case | models | GPUs | rows | grid (s) | rows/s | polars write (s) | grid / write | peak (MiB) | load |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    medians: list[str] = []
    for case in ("watchlist", "synthetic"):
        try:
            r, _, peak = run_child(["--child", "grid", case, str(repeat)])
        except RuntimeError as exc:
            print(f"| {case} | failed: {str(exc).splitlines()[-1][:200]} |")
            checks.append((f"grid within 3x of the polars-only write ({case})", False, "run failed"))
            continue
        ratio = r["grid_s"] / r["write_s"]
        print(f"| {case} | {r['models']} | {r['gpus']} | {r['rows']:,} | {r['grid_s']:.2f} | "
              f"{r['rows'] / r['grid_s']:,.0f} | {r['write_s']:.2f} | {ratio:.1f}x | {peak:,.0f} | {load_now()} |")
        checks.append((f"grid within 3x of the polars-only write ({case})", ratio <= 3, f"{ratio:.1f}x"))
        checks.append((f"grid peak memory under 1.5 GiB ({case})", peak < 1536, f"{peak:,.0f} MiB"))
        medians.append(f"- {case}: median of {repeat} runs: grid {r['grid_median_s']:.2f} s, polars write "
                       f"{r['write_median_s']:.2f} s, grid / write {r['grid_median_s'] / r['write_median_s']:.1f}x")
    print("\n" + "\n".join(medians))
    sys.stdout.flush()


def graph_section(args: argparse.Namespace, repeat: int, checks: list[tuple[str, bool, str]],
                  only: set[str]) -> str | None:
    """The whole-graph runs; returns a copy of the full watchlist run's snapshot (for the report section)."""
    # 2. whole graph: full and incremental
    print("\n## The whole asset graph on replay (in-process, as `vramlab run`)\n")
    print("The two later runs follow the full one on the same data directory: first the same recordings again "
          "(nothing changed), then a run in which only prices changed (the 14 "
          "SkyPilot catalogs answer 10% cheaper, observed an hour later). *Re-used* counts what the caches answered: "
          "sizing rows (unchanged revisions and GPU rows), placements (`placement_cache`, sql/008) and model files' "
          "price-independent parts (`export_cache`, sql/009). CPU is the run's process time (all its threads).\n")
    print("| case | run | wall (s) | CPU (s) | peak (MiB) | offers | sizing rows computed / total | placements computed / "
          "re-used | model files sized / re-used | setups | slowest steps (s) | load |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    wanted = args.graph_case or (["watchlist"] if args.quick else ["watchlist", "synthetic"])
    if "graph" not in only:  # the report alone still needs the full watchlist run's snapshot
        wanted = ["watchlist"]
    cases = [c for c in (("watchlist", 0, 0), ("synthetic 200 x 60", 200, 60)) if c[0].split()[0] in wanted]
    report_snapshot: str | None = None
    report_dir = tempfile.mkdtemp()
    for label, n_models, n_gpus in cases:
        with tempfile.TemporaryDirectory() as d:
            full_seconds = None
            for variant in ("full", "same", "prices"):
                second = variant != "full"
                run = {"full": "full, fresh data dir", "same": "nothing changed",
                       "prices": "incremental, prices changed"}[variant]
                kind = {"full": "full", "same": "nothing-changed", "prices": "incremental"}[variant]
                best = None
                try:
                    for attempt in range(repeat if not second else 1):
                        if not second and attempt:  # a full run again needs a fresh data directory
                            shutil.rmtree(d)
                            os.mkdir(d)
                        r, wall, peak = run_child(["--child", "graph", d, str(n_models), str(n_gpus),
                                                   "1" if variant == "prices" else "0"])
                        if best is None or r["seconds"] < best[0]["seconds"]:
                            best = (r, peak)
                            if not n_models and not second and r["snapshot"]:  # the full watchlist run's snapshot,
                                # for the report: copied now (the next attempt starts from an empty data dir)
                                shutil.rmtree(Path(report_dir) / "snapshot", ignore_errors=True)
                                report_snapshot = shutil.copytree(r["snapshot"], Path(report_dir) / "snapshot",
                                                                  symlinks=True)
                except RuntimeError as exc:
                    print(f"| {label} | {run} | failed: {str(exc).splitlines()[-1][:200]} |")
                    checks.append((f"{label} {kind} run succeeds", False, "the run's process failed"))
                    break
                r, peak = best
                steps = ", ".join(f"{k} {v:.1f}" for k, v in sorted(r["steps"].items(), key=lambda kv: -kv[1])[:4])
                sz, st, ex = r["sizing"], r["setups"], r["exports"]
                print(f"| {label} | {run} | {r['seconds']:.1f} | {r['cpu_seconds']:.1f} | {peak:,.0f} | "
                      f"{r['counts']['offers_current']:,} | "
                      f"{sz.get('rows_computed', 0):,} / {sz.get('dagster/row_count', 0):,} | "
                      f"{st.get('placements_computed', 0):,} / {st.get('placements_reused', 0):,} | "
                      f"{ex.get('model_files_sized', 0):,} / {ex.get('model_files_reused', 0):,} | "
                      f"{r['counts']['cheapest_setups']:,} | {steps} | {load_now()} |")
                sys.stdout.flush()
                if not r["success"]:
                    checks.append((f"{label} {kind} run succeeds", False, "failed"))
                if n_models and not second:
                    checks.append(("full replay run 200 x 60 under 60 s", r["success"] and r["seconds"] < 60,
                                   f"{r['seconds']:.1f} s" + ("" if r["success"] else " (run failed)")))
                if not second:
                    full_seconds = r["seconds"]
                if variant == "same" and full_seconds:
                    checks.append((f"nothing-changed run at most 20% of the full run ({label})",
                                   r["success"] and r["seconds"] <= 0.2 * full_seconds,
                                   f"{r['seconds']:.1f} s of {full_seconds:.1f} s "
                                   f"({r['seconds'] / full_seconds:.0%})"))
                if variant == "prices" and not n_models:  # the goal is for the 43-model watchlist
                    checks.append((f"incremental run under 10 s ({label})", r["success"] and r["seconds"] < 10,
                                   f"{r['seconds']:.1f} s" + ("" if r["success"] else " (run failed)")))
                checks.append((f"peak memory under 1.5 GiB ({label}, {kind})", peak < 1536, f"{peak:,.0f} MiB"))
    if report_snapshot is None:
        shutil.rmtree(report_dir, ignore_errors=True)
    return report_snapshot


def report_section(report_snapshot: str | None, repeat: int, checks: list[tuple[str, bool, str]]) -> None:
    # 2b. the HTML report from the full watchlist run's snapshot
    print("\n## HTML report build (`render_report`, English) from the full watchlist run's snapshot\n")
    if report_snapshot is None:
        print("No snapshot: the full watchlist run failed.")
        checks.append(("report build under 10 s for 43 models", False, "no snapshot"))
    else:
        try:
            r, _, peak = run_child(["--child", "report", str(report_snapshot), str(repeat)])
            print("| models | pages | build (s) | peak (MiB) | load |")
            print("|---:|---:|---:|---:|---:|")
            print(f"| {r['models']} | {r['pages']} | {r['seconds']:.2f} | {peak:,.0f} | {load_now()} |")
            checks.append((f"report build under 10 s for {r['models']} models", r["seconds"] < 10,
                           f"{r['seconds']:.2f} s"))
        except RuntimeError as exc:
            print(f"Report build failed: {str(exc).splitlines()[-1][:300]}")
            checks.append(("report build under 10 s for 43 models", False, "failed"))
    sys.stdout.flush()


def fetch_section(checks: list[tuple[str, bool, str]]) -> None:
    # 3. fetching with latency
    print("\n## Fetching every price source with 1 s latency per request\n")
    r, _, peak = run_child(["--child", "fetch", "1.0"])
    print(f"{r['sources']} sources (ECB first, then {r['sources'] - 1} price sources concurrently), "
          f"{r['requests']} requests, live client settings (0.5 s between requests to one host, shared by all "
          f"sources; 14 SkyPilot catalogs share raw.githubusercontent.com).\n")
    print("| wall (s) | sum of latencies (s) | slowest source alone (s) | wall / sum | wall / slowest | peak (MiB) | "
          "load |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| {r['wall_s']:.1f} | {r['sum_s']:.0f} | {r['slowest_s']:.0f} ({r['slowest']}) | "
          f"{r['wall_s'] / r['sum_s']:.2f} | {r['wall_s'] / r['slowest_s']:.1f}x | {peak:,.0f} | {load_now()} |")
    checks.append(("fetch with 1 s latency under 3x the slowest source", r["wall_s"] < 3 * r["slowest_s"],
                   f"{r['wall_s'] / r['slowest_s']:.1f}x"))
    sys.stdout.flush()


def startup_section(repeat: int, checks: list[tuple[str, bool, str]]) -> None:
    # 4. CLI start-up
    print("\n## CLI start-up (whole command, interpreter included)\n")
    print("| command | best (s) | peak (MiB) | load |")
    print("|---|---:|---:|---:|")
    vramlab = str(Path(PY).parent / "vramlab")
    config = str(ROOT / "pipeline/replay/hub/configs/meta-llama__Llama-3.1-8B.json")
    for label, cmd in (("vramlab --help", [vramlab, "--help"]),
                       ("vramlab size <Llama-3.1-8B config> --json", [vramlab, "size", config, "--json"]),
                       ("vramlab fit kimi-k3.1-pro --gpu h100 --format fp8 --json",
                        [vramlab, "fit", "kimi-k3.1-pro", "--gpu", "h100", "--format", "fp8", "--json"]),
                       ("python -c pass (interpreter alone)", [PY, "-c", "pass"])):
        seconds, peak = command_time(cmd, max(repeat, 5))
        print(f"| `{label}` | {seconds:.2f} | {peak:,.0f} | {load_now()} |")
        if label.startswith(("vramlab size", "vramlab fit")):
            checks.append((f"`{label.split(' <')[0].split(' kimi')[0]}` starts under 0.3 s", seconds < 0.3,
                           f"{seconds:.2f} s"))

    print(subprocess.run([PY, str(ROOT / "benchmarks" / "startup.py")], capture_output=True, text=True).stdout)


if __name__ == "__main__":
    main()
