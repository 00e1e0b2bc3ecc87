"""Payload faults in real Dagster runs of the raw and core price assets on a real DuckDB file.

Expected for each: the run succeeds; the faulty source is recorded in ``fetch_log`` with a specific outcome and
its payload landed; the healthy sources load; the faulty source keeps its last-known-good offers (not marked
removed, so they go stale after 2 h rather than vanishing); no observation already loaded is lost."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import httpx
import pytest
from harness import (
    HTML_PAGE,
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

from pipeline.sources.fx import parse_ecb
from pipeline.sources.replay import REPLAY_ROOT

SOURCES = ["lambda", "hetzner", "skypilot-nebius"]


def run(tmp: Path, monkeypatch: pytest.MonkeyPatch, overrides: dict | None = None, sources: list[str] = SOURCES):
    """One Dagster run of ECB + ``sources`` + the core price assets; ``overrides`` replace recorded answers."""
    return materialize(price_assets(sources), tmp, monkeypatch, client=lambda: replay_client(overrides or {}))


def last_fetch(db: Path, source: str) -> tuple:
    return db_rows(db, "SELECT outcome, message, raw_path, offers FROM fetch_log WHERE source = ? "
                       "ORDER BY started_at DESC LIMIT 1", [source])[0]


def current(db: Path, source: str) -> dict[str, tuple]:
    return {r[0]: r[1:] for r in db_rows(db, "SELECT offer_key, price_per_hour_usd, removed FROM offers_current "
                                             "WHERE source = ?", [source])}


@pytest.fixture
def baseline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """A healthy run first: the last-known-good state the faulty run must keep."""
    result = run(tmp_path, monkeypatch)
    assert result.success
    db = tmp_path / "vramlab.duckdb"
    return {"tmp": tmp_path, "db": db, "observations": count(db, "price_observations"),
            "lambda": current(db, "lambda")}


def assert_kept_last_known_good(baseline: dict, source: str = "lambda") -> None:
    db = baseline["db"]
    assert count(db, "price_observations") >= baseline["observations"]  # nothing lost
    now = current(db, source)
    assert now.keys() == baseline[source].keys() and not any(removed for _, removed in now.values())


def assert_run_completed(result) -> None:  # type: ignore[no-untyped-def]
    assert result.success
    assert {"core__price_observations", "core__offers_current"} <= materialized(result)
    assert all(checks(result)[name] for name in ("schema", "non_empty", "prices_sane", "no_duplicates"))


def test_truncated_json(baseline: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """P01 truncated JSON: ``parse_error`` naming the body, landed; healthy sources and last-known-good kept."""
    result = run(baseline["tmp"], monkeypatch, {url_of("lambda"): httpx.Response(200, content=recorded("lambda")[:300])})
    assert_run_completed(result)
    outcome, message, raw_path, _ = last_fetch(baseline["db"], "lambda")
    assert outcome == "parse_error" and "not valid JSON" in message
    assert (baseline["tmp"] / raw_path).exists() and not Path(raw_path).is_absolute()
    assert last_fetch(baseline["db"], "hetzner")[0] == "ok"
    assert_kept_last_known_good(baseline)


def test_empty_body(baseline: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """P02 an empty 200 body: ``parse_error``, last-known-good kept."""
    result = run(baseline["tmp"], monkeypatch, {url_of("lambda"): httpx.Response(200, content=b"")})
    assert_run_completed(result)
    assert last_fetch(baseline["db"], "lambda")[0] == "parse_error"
    assert_kept_last_known_good(baseline)


@pytest.mark.parametrize("source", ["gcp", "azure", "digitalocean", "vultr"])
def test_html_page_on_paged_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> None:
    """P03 a paged source answering 200 with an HTML page. Before the fix ``ParseError`` escaped ``run_source``
    (raised while reading the page for the next-page link): nothing landed, nothing logged, the step failed and
    every downstream asset was skipped for all sources. Now: ``parse_error`` with the HTML landed, run succeeds."""
    page = httpx.Response(200, content=HTML_PAGE, headers={"content-type": "text/html"})
    result = run(tmp_path, monkeypatch, {url_of(source): page}, sources=[source, "hetzner"])
    assert_run_completed(result)
    db = tmp_path / "vramlab.duckdb"
    outcome, message, raw_path, offers = last_fetch(db, source)
    assert outcome == "parse_error" and "while fetching" in message and "not valid JSON" in message and offers == 0
    meta = json.loads((tmp_path / raw_path).read_text())
    assert meta["parts"][-1]["sha256"] and meta["parts"][-1]["size"] == len(HTML_PAGE)
    assert last_fetch(db, "hetzner")[0] == "ok" and current(db, "hetzner")


def test_renamed_field(baseline: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """P04 schema change, a renamed field: ``parse_error`` naming the field; last-known-good kept."""
    body = recorded("lambda").replace(b'"instance_type"', b'"instanceType"')
    result = run(baseline["tmp"], monkeypatch, {url_of("lambda"): httpx.Response(200, content=body)})
    assert_run_completed(result)
    outcome, message, _, _ = last_fetch(baseline["db"], "lambda")
    assert outcome == "parse_error" and "instance_type" in message
    assert_kept_last_known_good(baseline)


def test_new_nesting(baseline: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """P05 schema change, a new level of nesting around the payload: ``parse_error`` naming ``data``."""
    body = json.dumps({"result": json.loads(recorded("lambda"))}).encode()
    result = run(baseline["tmp"], monkeypatch, {url_of("lambda"): httpx.Response(200, content=body)})
    assert_run_completed(result)
    outcome, message, _, _ = last_fetch(baseline["db"], "lambda")
    assert outcome == "parse_error" and "'data'" in message
    assert_kept_last_known_good(baseline)


def _catalog_with(first_row: dict) -> bytes:
    rows = list(csv.DictReader(io.StringIO(recorded("skypilot-nebius").decode())))
    rows[0].update(first_row)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\r\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


def test_zero_price_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """P06 a price of 0: RunPod's "not offered on that cloud" (genuine captures carry it on types that
    are not on a cloud, so it is no error): that offer is skipped and counted as ignored, never rejected; the
    rest of the payload loads. Runpod used to drop a 0 price without counting it."""
    data = json.loads(recorded("runpod"))
    data["data"]["gpuTypes"][0]["securePrice"] = 0
    result = run(tmp_path, monkeypatch, {url_of("runpod"): httpx.Response(200, json=data)}, sources=["runpod"])
    assert_run_completed(result)
    outcome, _, _, offers = last_fetch(tmp_path / "vramlab.duckdb", "runpod")
    rejected, ignored = db_rows(tmp_path / "vramlab.duckdb", "SELECT rejected, ignored_reasons FROM fetch_log "
                                                             "WHERE source = 'runpod'")[0]
    counts = [c for c in (1, 2, 4, 8) if c <= int(data["data"]["gpuTypes"][0].get("maxGpuCount") or 1)]
    assert outcome == "ok" and rejected == 0 and offers > 0
    assert ignored["not offered (price absent, empty or 0)"] == len(counts)  # one secure on-demand offer per count


def test_negative_price_rejects_only_that_offer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """P07 a negative on-demand price: that offer alone is rejected; the same row's valid spot price is kept
    (before, the whole row or GPU type was rejected, spot included)."""
    body = _catalog_with({"Price": "-2.95", "SpotPrice": "1.25"})
    first = next(csv.DictReader(io.StringIO(body.decode())))
    result = run(tmp_path, monkeypatch, {url_of("skypilot-nebius"): httpx.Response(200, content=body)},
                 sources=["skypilot-nebius"])
    assert_run_completed(result)
    db = tmp_path / "vramlab.duckdb"
    assert last_fetch(db, "skypilot-nebius")[0] == "partial"
    rows = db_rows(db, "SELECT allocation, price_per_hour_usd FROM offers_current WHERE instance_type = ? "
                       "AND region = ?", [first["InstanceType"], first["Region"]])
    assert rows == [("spot", 1.25)]


def test_x100_price_quarantined_not_blocking(baseline: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """P08 a x100 price (cents read as dollars). Before the fix it was committed to price_observations and the
    blocking ``prices_sane`` check, scanning the whole append-only table, failed on this run AND every later
    one. Now it is quarantined (price_quarantine, WARN check), this run and the next one publish."""
    data = json.loads(recorded("lambda"))
    key = next(k for k, v in data["data"].items() if "h100" in k)
    data["data"][key]["instance_type"]["price_cents_per_hour"] *= 100
    result = run(baseline["tmp"], monkeypatch, {url_of("lambda"): httpx.Response(200, json=data)})
    assert_run_completed(result)
    assert checks(result)["quarantined_prices"] is False  # reported, as a warning
    db = baseline["db"]
    held = db_rows(db, "SELECT instance_type, reason FROM price_quarantine")
    assert [h[0] for h in held] == [key] and "ceiling" in held[0][1]
    assert db_rows(db, "SELECT count(*) FROM price_observations WHERE price_per_gpu_hour_usd > 80")[0][0] == 0
    # the next run with healthy data publishes as usual
    again = run(baseline["tmp"], monkeypatch, {url_of("lambda"): httpx.Response(200, content=recorded("lambda"))})
    assert_run_completed(again)
    assert checks(again)["quarantined_prices"] is True


def test_currency_switch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """P09 a provider switches currency (OVH EUR -> GBP): prices are converted once at the ECB rate of the
    bundled recording and the listed currency is kept; a currency without a rate would be rejected (counted)."""
    data = json.loads(recorded("ovh"))
    data["locale"]["currencyCode"] = "GBP"
    result = run(tmp_path, monkeypatch, {url_of("ovh"): httpx.Response(200, json=data)}, sources=["ovh"])
    assert_run_completed(result)
    rates = parse_ecb((REPLAY_ROOT / "prices" / "ecb" / "eurofxref-daily.xml").read_bytes())
    gbp_per_usd, _ = rates.per_usd("GBP", "ovh")
    rows = db_rows(tmp_path / "vramlab.duckdb", "SELECT currency, price_per_hour, price_per_hour_usd, fx_rate "
                                                "FROM price_observations WHERE source = 'ovh'")
    assert rows and all(r[0] == "GBP" and abs(r[3] - gbp_per_usd) < 1e-12 for r in rows)
    assert all(abs(r[2] - r[1] / gbp_per_usd) < 1e-6 for r in rows)  # each rounded to 6 decimals


def test_price_change_within_the_hour(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """P10 a price changes between two fetches of the same hour: both observations are kept (before, the
    second was silently ignored: one row per offer per hour, first wins), offers_current shows the new one."""
    data = json.loads(recorded("lambda"))
    key = next(iter(data["data"]))
    assert run(tmp_path, monkeypatch, {url_of("lambda"): httpx.Response(200, json=data)}, sources=["lambda"]).success
    old = data["data"][key]["instance_type"]["price_cents_per_hour"]
    data["data"][key]["instance_type"]["price_cents_per_hour"] = old + 10
    assert run(tmp_path, monkeypatch, {url_of("lambda"): httpx.Response(200, json=data)}, sources=["lambda"]).success
    db = tmp_path / "vramlab.duckdb"
    history = ("SELECT price_per_hour, observed_hour FROM price_observations WHERE instance_type = ? "
               "ORDER BY observed_at")
    rows = db_rows(db, history, [key])
    assert [r[0] for r in rows] == [old / 100, (old + 10) / 100]
    assert db_rows(db, "SELECT price_per_hour_usd FROM offers_current WHERE instance_type = ?", [key]) == \
        [((old + 10) / 100,)]
    # an unchanged price later in the hour adds no row; only a fetch that lands in the next hour (the clock may
    # cross one between the runs) records the unchanged price again, as that hour's observation
    before = count(db, "price_observations")
    assert run(tmp_path, monkeypatch, {url_of("lambda"): httpx.Response(200, json=data)}, sources=["lambda"]).success
    after = db_rows(db, history, [key])
    if len(after) == len(rows):
        assert count(db, "price_observations") == before
    else:
        assert len(after) == len(rows) + 1 and after[-1][0] == after[-2][0] and after[-1][1] != after[-2][1]
