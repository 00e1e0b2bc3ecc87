"""Paths and loaders shared by the tests."""

from __future__ import annotations

from pathlib import Path

from pipeline.cli.models import load_model
from sizing_core import Architecture

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "pipeline" / "replay" / "hub" / "configs"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def config_path(name: str) -> Path:
    return CONFIGS / f"{name}.json"


def arch(name: str) -> Architecture:
    """Architecture of a bundled config, by its file stem (``meta-llama__Llama-3.1-8B``)."""
    return load_model(str(config_path(name)))


def all_config_names() -> list[str]:
    return sorted(p.stem for p in CONFIGS.glob("*.json") if not p.name.endswith(".hf_quant_config.json"))
