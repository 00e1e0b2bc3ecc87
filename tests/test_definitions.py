"""The Dagster code location loads and its asset materializes for real into a temp data directory."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest

from pipeline.definitions import defs, out__bundled_model_sizing


def test_definitions_load() -> None:
    dg.Definitions.validate_loadable(defs)


def test_sizing_asset_materializes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VRAMLAB_DATA_DIR", str(tmp_path))
    result = dg.materialize([out__bundled_model_sizing])
    assert result.success
    report = json.loads((tmp_path / "reports" / "sizing.json").read_text())
    assert report["failures"] == {}
    assert {m["model"] for m in report["models"]} >= {"kimi-k3.1-pro", "deepseek-ai__DeepSeek-V3"}
    metadata = result.asset_materializations_for_node("out__bundled_model_sizing")[0].metadata
    assert metadata["models"].value == len(report["models"])
