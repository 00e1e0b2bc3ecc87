"""The main job. Until the Dagster pipeline lands it sizes every bundled model and writes a report."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from sizing_core import SizingError, size_model
from sizing_core.registry import registry_ids

from .models import load_model

REPO_ROOT = Path(__file__).resolve().parent.parent
BUNDLED_CONFIGS = Path(__file__).resolve().parent / "replay" / "hub" / "configs"


def resolve_data_dir(override: str | None = None) -> Path:
    """``override``, else ``$VRAMLAB_DATA_DIR``, else ``data/`` at the repository root."""
    return Path(override or os.environ.get("VRAMLAB_DATA_DIR") or REPO_ROOT / "data")


def bundled_models() -> list[str]:
    configs = sorted(str(p) for p in BUNDLED_CONFIGS.glob("*.json") if not p.name.endswith("hf_quant_config.json"))
    return registry_ids() + configs


def size_bundled_models() -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Size every bundled model; a model that fails is recorded with its reason and the others continue."""
    reports, failures = [], {}
    for ref in bundled_models():
        name = Path(ref).stem if ref.endswith(".json") else ref
        try:
            reports.append(size_model(load_model(ref)).model_dump(mode="json") | {"model": name})
        except (SizingError, KeyError) as exc:
            failures[name] = str(exc)
    return reports, failures


def write_sizing_report(data_dir: Path, reports: list[dict[str, Any]], failures: dict[str, str]) -> Path:
    out_dir = data_dir / "reports"
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "sizing.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"generated_at": datetime.now(UTC).isoformat(), "models": reports,
                               "failures": failures}, indent=1))
    tmp.replace(path)  # readers never see a half-written report
    return path


def run_main_job(data_dir: str | None = None) -> int:
    reports, failures = size_bundled_models()
    path = write_sizing_report(resolve_data_dir(data_dir), reports, failures)
    console = Console()
    table = Table(title="Bundled models: parameters and weights (GiB)")
    for col in ("model", "params (B)", "active (B)", "bf16", "native", "q4_k_m", "KV B/token bf16"):
        table.add_column(col, justify="left" if col == "model" else "right")
    for r in reports:
        w = r["weightsGiB"]
        table.add_row(r["model"], f"{r['parameters']:,.2f}", f"{r['activeParameters']:,.2f}", f"{w['bf16']:,.2f}",
                      f"{w['native']:,.2f}", f"{w['q4_k_m']:,.2f}", f"{r['kvCacheBytesPerToken']['bf16']:,}")
    console.print(table)
    console.print(f"wrote {len(reports)} reports to {path}" + (f"; {len(failures)} failed" if failures else ""))
    for name, why in failures.items():
        console.print(f"[red]failed[/red] {name}: {why}")
    return 1 if failures else 0
