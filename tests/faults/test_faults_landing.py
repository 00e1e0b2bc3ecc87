"""Raw landing and re-parsing faults: a torn fetch-log line, an unparseable landed payload, a moved
data directory, identical replay timestamps, re-parsing after a parser fix. Real Dagster runs on real files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
import pytest
from harness import (
    checks,
    count,
    db_rows,
    materialize,
    materialized,
    price_assets,
    recorded,
    replay_client,
    url_of,
)

from pipeline.assets.core import core__fetch_log, core__models
from pipeline.settings import REPLAY_SNAPSHOT_AT
from pipeline.sources.landing import read_log, read_log_report
from pipeline.sources.replay import REPLAY_ROOT
from pipeline.storage.db import connect
from pipeline.storage.loaders import request_reparse

SOURCES = ["lambda", "hetzner"]


def run(tmp: Path, monkeypatch: pytest.MonkeyPatch, overrides: dict | None = None, extra: list | None = None):
    assets = price_assets(SOURCES)
    for asset in extra or []:
        assets.append(asset)
        assets.selection.append(asset.key.to_user_string())
    return materialize(assets, tmp, monkeypatch, client=lambda: replay_client(overrides or {}))


def per_source(db: Path) -> dict[str, int]:
    return dict(db_rows(db, "SELECT source, count(*) FROM price_observations GROUP BY source"))


def test_torn_fetch_log_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """L01 a torn last line in raw/fetch_log.jsonl (what a full disk or a kill mid-write leaves). Before the fix
    core__fetch_log and core__models failed with a pydantic ValidationError on every later run. Now the line is
    skipped and reported (metadata + warning), the next append starts on a fresh line, nothing else is lost."""
    assert run(tmp_path, monkeypatch).success
    log = tmp_path / "raw" / "fetch_log.jsonl"
    good = len(read_log(tmp_path))
    with open(log, "ab") as fh:
        fh.write(b'{"source": "lambda", "provider": "lambda", "started_at": "2026-11-28T1')  # no newline: torn
    result = run(tmp_path, monkeypatch, {url_of("lambda"): httpx.Response(200, content=recorded("lambda"))},
                 extra=[core__models])
    assert result.success and {"core__fetch_log", "core__models", "core__offers_current"} <= materialized(result)
    md = result.asset_materializations_for_node("core__fetch_log")[0].metadata
    report = read_log_report(tmp_path)
    assert md["torn_log_lines"].value == [n for n, _ in report.torn] and len(report.torn) == 1
    assert len(report.entries) == good + 3  # the torn line cost nothing: ECB + both sources appended after it
    assert db_rows(tmp_path / "vramlab.duckdb", "SELECT count(*) FROM fetch_log")[0][0] >= good


def test_unparseable_landed_payload_is_isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """L02 one pending landed payload cannot be read (damaged body file). Before, the whole price layer failed
    (no per-fetch isolation). Now that fetch stays pending and is reported (WARN check ``landing_readable``),
    every other fetch loads."""

    assert materialize(price_assets(SOURCES, core=False), tmp_path, monkeypatch, client=lambda: replay_client()).success
    entries = {e.source: e for e in read_log(tmp_path)}
    lambda_meta = tmp_path / entries["lambda"].raw_path
    body = lambda_meta.with_name(json.loads(lambda_meta.read_text())["parts"][0]["body"])
    body.write_bytes(b"\x1f\x8b not gzip any more")
    result = materialize(price_assets([], core=True), tmp_path, monkeypatch)
    assert result.success and checks(result)["landing_readable"] is False
    db = tmp_path / "vramlab.duckdb"
    assert per_source(db).get("hetzner", 0) > 0 and "lambda" not in per_source(db)
    pending = db_rows(db, "SELECT source FROM fetch_log WHERE loaded_at IS NULL AND outcome IN ('ok', 'partial')")
    assert pending == [("lambda",)]


def test_moved_data_dir_reparses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """L03 ``data/`` moved (or restored from a backup elsewhere), then a re-parse: ``raw_path`` is relative, so
    the landed payloads are found and the observations come back to the same count. Before, it was absolute and
    the re-parse found nothing."""
    first = tmp_path / "first"
    assert run(first, monkeypatch).success
    before = per_source(first / "vramlab.duckdb")
    moved = tmp_path / "moved"
    shutil.move(first, moved)
    con = connect(moved / "vramlab.duckdb")
    assert request_reparse(con, "lambda") == 1
    con.close()
    result = materialize(price_assets([], core=True), moved, monkeypatch)
    assert result.success and checks(result)["landing_readable"] is True
    assert per_source(moved / "vramlab.duckdb") == before


def test_identical_replay_timestamps_keep_both_payloads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """L04 two fetches with the same timestamp (replay stamps every fetch with the snapshot time), the second
    one bad. Before, the bad body overwrote the good landed file, and after a re-parse the source's observations
    dropped to 0. Now each fetch lands in its own files, and a re-parse restores the same observations."""
    assert run(tmp_path, monkeypatch).success
    db = tmp_path / "vramlab.duckdb"
    before = per_source(db)
    bad = httpx.Response(200, content=b'{"data": "oops"}',
                         headers={"x-vramlab-observed-at": REPLAY_SNAPSHOT_AT.isoformat()})
    assert run(tmp_path, monkeypatch, {url_of("lambda"): bad}).success
    metas = sorted((tmp_path / "raw" / "lambda").glob("*/*Z.json"))
    assert len(metas) == 2  # the good payload is still there, next to the bad one
    con = connect(db)
    request_reparse(con, "lambda")
    con.close()
    assert materialize(price_assets([], core=True), tmp_path, monkeypatch).success
    assert per_source(db) == before and before["lambda"] > 0


def test_reparse_after_parser_fix_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """L05 re-parse of a whole source after a parser fix: observation count per source unchanged, offers equal,
    fetch log untouched (counts before/after)."""
    assert run(tmp_path, monkeypatch).success
    db = tmp_path / "vramlab.duckdb"
    before = (per_source(db), count(db, "fetch_log"),
              db_rows(db, "SELECT offer_key, price_per_hour_usd FROM offers_current ORDER BY 1"))
    con = connect(db)
    for source in SOURCES:
        request_reparse(con, source)
    con.close()
    assert materialize(price_assets([], core=True), tmp_path, monkeypatch).success
    after = (per_source(db), count(db, "fetch_log"),
             db_rows(db, "SELECT offer_key, price_per_hour_usd FROM offers_current ORDER BY 1"))
    assert after == before


def test_fetch_log_counts_ignored_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """L06 rows a parser quietly ignores (not GPU offers) are counted in DuckDB's ``fetch_log`` (migration 011),
    not only in ``fetch_log.jsonl``. By hand from the recordings: Vultr's ``plans.json`` has two GPU plans and
    ``plans-metal.json`` one 8x H100 machine plus ``vbm-4c-32gb`` (4 CPU threads, no GPU field, none in its id): one
    row ignored as "not a GPU offer", none rejected. Lambda's recording has only GPU instance types: 0 ignored.
    Rows loaded before migration 011 (NULL) learn their counts from the jsonl on the next ``core__fetch_log``."""
    vultr = REPLAY_ROOT / "prices" / "vultr"
    assert all(p.get("gpu_type") for p in json.loads((vultr / "plans.json").read_text())["plans"])
    metal = json.loads((vultr / "plans-metal.json").read_text())["plans_metal"]
    assert [p["id"] for p in metal] == ["vcg-h100-216c-1914gb-640vram", "vbm-4c-32gb"]  # 8x H100 (in its id); CPU
    assets = price_assets(["vultr", "lambda"])
    result = materialize(assets, tmp_path, monkeypatch, client=lambda: replay_client({}))
    assert result.success
    md = result.asset_materializations_for_node("core__fetch_log")[0].metadata
    assert md["ignored_rows_latest_fetch"].value == {"vultr": {"not a GPU offer": 1}}  # what the UI shows
    db = tmp_path / "vramlab.duckdb"
    query = "SELECT source, ignored, ignored_reasons, rejected FROM fetch_log WHERE source IN ('vultr', 'lambda') ORDER BY 1"
    assert db_rows(db, query) == [("lambda", 0, {}, 0), ("vultr", 1, {"not a GPU offer": 1}, 0)]
    con = connect(db)
    con.execute("UPDATE fetch_log SET ignored = NULL, ignored_reasons = NULL")  # as rows loaded before 011 are
    con.close()
    only_log = price_assets([], core=False)
    only_log.append(core__fetch_log)
    only_log.selection.append(core__fetch_log.key.to_user_string())
    assert materialize(only_log, tmp_path, monkeypatch).success
    assert db_rows(db, query) == [("lambda", 0, {}, 0), ("vultr", 1, {"not a GPU offer": 1}, 0)]
