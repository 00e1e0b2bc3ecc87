"""The main job. Until the Dagster pipeline lands it sizes every bundled model and writes a report."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.table import Table

from sizing_core import SizingError, size_model
from sizing_core.registry import registry_ids

from .models import load_model

REPO_ROOT = Path(__file__).resolve().parent.parent
BUNDLED_CONFIGS = Path(__file__).resolve().parent / "replay" / "hub" / "configs"


def data_dir(override: str | None = None) -> Path:
    return Path(override or os.environ.get("VRAMLAB_DATA_DIR") or REPO_ROOT / "data")


def bundled_models() -> list[str]:
    configs = sorted(str(p) for p in BUNDLED_CONFIGS.glob("*.json") if not p.name.endswith("hf_quant_config.json"))
    return registry_ids() + configs


def run_main_job(data_dir: str | None = None) -> int:
    out_dir = globals()["data_dir"](data_dir) / "reports"
    out_dir.mkdir(parents=True, exist_ok=True)
    console = Console()
    table = Table(title="Bundled models: parameters and weights (GiB)")
    for col in ("model", "params (B)", "active (B)", "bf16", "native", "q4_k_m", "KV B/token bf16"):
        table.add_column(col, justify="left" if col == "model" else "right")
    reports, failures = [], {}
    for ref in bundled_models():
        name = Path(ref).stem if ref.endswith(".json") else ref
        try:
            report = size_model(load_model(ref))
        except (SizingError, KeyError) as exc:
            failures[name] = str(exc)
            continue
        reports.append(report.model_dump(mode="json") | {"model": name})
        w = report.weights_gib
        table.add_row(name, f"{report.parameters:,.2f}", f"{report.active_parameters:,.2f}", f"{w['bf16']:,.2f}",
                      f"{w['native']:,.2f}", f"{w['q4_k_m']:,.2f}", f"{report.kv_cache_bytes_per_token['bf16']:,}")
    console.print(table)
    path = out_dir / "sizing.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"generated_at": datetime.now(UTC).isoformat(), "models": reports,
                               "failures": failures}, indent=1))
    tmp.replace(path)
    console.print(f"wrote {len(reports)} reports to {path}" + (f"; {len(failures)} failed" if failures else ""))
    for name, why in failures.items():
        console.print(f"[red]failed[/red] {name}: {why}")
    return 1 if failures else 0
