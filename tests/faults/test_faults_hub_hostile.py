"""Hostile or oddly shaped Hugging Face Hub answers, in real Dagster runs of ``raw_hub__models`` and
``core__models``. The rule for each: no file is written outside the data dir, the bad model is recorded with a
specific outcome and its payload landed (nothing observed is lost), every other watchlist model is ingested, and
the run succeeds (so publishing goes on).

Each model-info answer is the genuine recording of Qwen/Qwen2.5-7B-Instruct with one field changed as a hostile
or broken Hub could send it (constructed from the recorded shape)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from harness import db_rows, materialize, materialized

from pipeline.assets.core import core__models
from pipeline.assets.raw import raw_hub__models
from pipeline.sources.http import make_client
from pipeline.sources.huggingface import HUB
from pipeline.sources.landing import read_log
from pipeline.sources.replay import REPLAY_ROOT, ReplayTransport

REPO = "Qwen/Qwen2.5-7B-Instruct"
INFO_RECORDED = json.loads((REPLAY_ROOT / "hub" / "api" / f"{REPO.replace('/', '__')}.json").read_text())
SHA = INFO_RECORDED["sha"]
INFO = f"{HUB}/api/models/{REPO}?blobs=true"
CONFIG = f"{HUB}/{REPO}/resolve/{SHA}/config.json"
CONFIG_RECORDED = json.loads((REPLAY_ROOT / "hub" / "configs" / f"{REPO.replace('/', '__')}.json").read_text())
ESCAPE = "../../../../../../../../../../tmp/vramlab-escape-{pid}/watchlist"


def info_with(**changes: object) -> dict[str, httpx.Response]:
    return {INFO: httpx.Response(200, json={**INFO_RECORDED, **changes})}


def config_with(**changes: object) -> dict[str, httpx.Response]:
    return {CONFIG: httpx.Response(200, json={**CONFIG_RECORDED, **changes})}


def hostile(tmp_path: Path) -> dict[str, tuple[dict[str, httpx.Response], str, str | None]]:
    """fault -> (overrides, expected outcome, text the fetch-log message must hold)."""
    escape = ESCAPE.format(pid=tmp_path.name)
    return {
        "sha_path_traversal": (info_with(sha=escape), "parse_error", "40-hex"),
        "sha_integer": (info_with(sha=12345), "parse_error", "40-hex"),
        "info_not_an_object": ({INFO: httpx.Response(200, json=["not", "an", "object"])}, "parse_error", "object"),
        "card_data_string": (info_with(cardData="license: apache-2.0"), "ok", None),
        "safetensors_string": (info_with(safetensors="BF16"), "ok", None),
        "siblings_strings": (info_with(siblings=["config.json", "model.safetensors"]), "ok", None),
        "layers_1e9": (config_with(num_hidden_layers=10**9), "parse_error", "beyond any real model"),
        "context_1e18": (config_with(max_position_embeddings=10**18), "parse_error", "beyond any real model"),
    }


@pytest.mark.parametrize("fault", ["sha_path_traversal", "sha_integer", "info_not_an_object", "card_data_string",
                                   "safetensors_string", "siblings_strings", "layers_1e9", "context_1e18"])
def test_hostile_hub_answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str) -> None:
    """H06-H13: a hostile sha, odd types, absurd counts."""
    overrides, expected, needle = hostile(tmp_path)[fault]
    data = tmp_path / "data"
    monkeypatch.setattr("pipeline.assets.raw.hub_client", lambda _replay: make_client(
        ReplayTransport(REPLAY_ROOT / "hub" / "manifest.json", overrides=overrides), sleep=lambda _s: None,
        min_interval=0.0, backoff=0.01))
    result = materialize([raw_hub__models, core__models], data)
    assert result.success and {"raw_hub__models", "core__models"} <= materialized(result)
    logs = {e.source: e for e in read_log(data) if e.source.startswith("hub:")}
    mine = logs[f"hub:{REPO}"]
    assert mine.outcome == expected, mine
    if needle:
        assert needle in (mine.message or ""), mine.message
    assert mine.raw_path and (data / mine.raw_path).exists()  # the answer is landed as received
    others = {k: v.outcome for k, v in logs.items() if k != f"hub:{REPO}"}
    assert others and set(others.values()) == {"ok"}
    # nothing written outside the data dir (the traversal target, or any stray file beside it)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data"]
    assert not Path(f"/tmp/vramlab-escape-{tmp_path.name}").exists()
    rows = dict(db_rows(data / "vramlab.duckdb", "SELECT repo, last_outcome FROM models"))
    assert rows[REPO] == expected
    shas = [r[0] for r in db_rows(data / "vramlab.duckdb", "SELECT sha FROM model_revisions WHERE sha IS NOT NULL")] \
        if db_rows(data / "vramlab.duckdb", "SELECT count(*) FROM information_schema.tables "
                                            "WHERE table_name = 'model_revisions'")[0][0] else []
    assert all(len(s) == 40 and all(c in "0123456789abcdef" for c in s) for s in shas), shas


def test_a_failed_hub_attempt_is_in_duckdbs_fetch_log_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed attempt was only in raw/fetch_log.jsonl, never in DuckDB's fetch_log
    (Hub attempts were filtered out). Now every attempt is; Hub rows are not taken for price sources (no
    observations parsed from them, no per-source freshness)."""
    from pipeline.storage.loaders import pending_fetches, source_freshness

    overrides, expected, _ = hostile(tmp_path)["sha_integer"]
    data = tmp_path / "data"
    monkeypatch.setattr("pipeline.assets.raw.hub_client", lambda _replay: make_client(
        ReplayTransport(REPLAY_ROOT / "hub" / "manifest.json", overrides=overrides), sleep=lambda _s: None,
        min_interval=0.0, backoff=0.01))
    assert materialize([raw_hub__models, core__models], data).success
    rows = dict(db_rows(data / "vramlab.duckdb", "SELECT source, outcome FROM fetch_log"))
    assert rows[f"hub:{REPO}"] == expected and len(rows) == len([e for e in read_log(data)])  # every attempt
    import duckdb

    con = duckdb.connect(str(data / "vramlab.duckdb"), read_only=True)
    try:
        assert pending_fetches(con) == []  # Hub payloads are never parsed as price offers
        from datetime import UTC, datetime

        assert source_freshness(con, datetime.now(UTC)) == []  # and are not price sources
    finally:
        con.close()
