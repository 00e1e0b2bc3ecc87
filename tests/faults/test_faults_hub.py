"""Hugging Face Hub faults in real Dagster runs of ``raw_hub__models`` and ``core__models``: a gated
repo (401/403), a removed repo (404), a malformed config, a huge config. Expected for each: that model is
recorded with a specific outcome (``gated``, ``missing``, ``parse_error``, ``too_large``) and its row kept in
``models``; every other watchlist model is ingested; the run succeeds."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from harness import db_rows, materialize, materialized

from pipeline.assets.core import core__models
from pipeline.assets.raw import raw_hub__models
from pipeline.sources.http import make_client
from pipeline.sources.huggingface import HUB, load_watchlist
from pipeline.sources.landing import read_log
from pipeline.sources.replay import REPLAY_ROOT, ReplayTransport

REPO = "Qwen/Qwen2.5-7B-Instruct"
SHA = json.loads((REPLAY_ROOT / "hub" / "api" / f"{REPO.replace('/', '__')}.json").read_text())["sha"]
INFO = f"{HUB}/api/models/{REPO}?blobs=true"
CONFIG = f"{HUB}/{REPO}/resolve/{SHA}/config.json"

FAULTS = {
    "gated_401": ({INFO: httpx.Response(401, json={"error": "Access to model is restricted"})}, "gated"),
    "gated_403": ({INFO: httpx.Response(403, json={"error": "Please accept the license"})}, "gated"),
    "removed_404": ({INFO: httpx.Response(404, json={"error": "Repository not found"})}, "missing"),
    "malformed_config": ({CONFIG: httpx.Response(200, content=b'{"hidden_size": 3584, "num_hidden_lay')},
                         "parse_error"),
    "huge_config": ({CONFIG: httpx.Response(200, content=b"{}", headers={"content-length": str(5 * 2**30)})},
                    "too_large"),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_hub_fault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str) -> None:
    """H01-H05 (gated 401, gated 403, removed 404, malformed config, huge config)."""
    overrides, expected = FAULTS[fault]
    monkeypatch.setattr("pipeline.assets.raw.hub_client", lambda _replay: make_client(
        ReplayTransport(REPLAY_ROOT / "hub" / "manifest.json", overrides=overrides), sleep=lambda _s: None,
        min_interval=0.0, backoff=0.01))
    result = materialize([raw_hub__models, core__models], tmp_path)
    assert result.success and {"raw_hub__models", "core__models"} <= materialized(result)
    logs = {e.source: e for e in read_log(tmp_path) if e.source.startswith("hub:")}
    assert logs[f"hub:{REPO}"].outcome == expected, logs[f"hub:{REPO}"]
    others = {k: v.outcome for k, v in logs.items() if k != f"hub:{REPO}"}
    assert others and set(others.values()) == {"ok"}
    rows = dict(db_rows(tmp_path / "vramlab.duckdb", "SELECT repo, last_outcome FROM models"))
    watchlist = load_watchlist().models
    assert len(rows) == len(watchlist) and rows[REPO] == expected
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks["watchlist_complete"] is True
    if expected == "too_large":
        assert "larger than" in logs[f"hub:{REPO}"].message
