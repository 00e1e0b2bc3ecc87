"""Faults per source family: timeout, 429 with Retry-After, 500, truncated JSON, moved HTML, empty result,
zero price, unknown currency. Each ends in a clear fetch-log outcome, lands what was received, and leaves the
other sources untouched. No test reaches the network (tests/conftest.py fails any non-loopback connect)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from pipeline.ingest.prices import fetch_sources
from pipeline.sources import PRICE_SOURCES
from pipeline.sources.http import make_client
from pipeline.sources.landing import read_log
from pipeline.sources.replay import REPLAY_ROOT, ReplayTransport

MANIFEST = json.loads((REPLAY_ROOT / "prices" / "manifest.json").read_text())["responses"]


def url_of(source: str, nth: int = 0) -> str:
    return [e["url"] for e in MANIFEST if e["source"] == source][nth]


def recorded(source: str, nth: int = 0) -> bytes:
    entry = [e for e in MANIFEST if e["source"] == source][nth]
    return (REPLAY_ROOT / "prices" / entry["file"]).read_bytes()


def run(tmp_path: Path, names: list[str], overrides: dict) -> tuple[dict, list[float]]:
    waits: list[float] = []
    client = make_client(ReplayTransport(overrides=overrides), sleep=waits.append, min_interval=0.0)
    _, results = fetch_sources([PRICE_SOURCES[n] for n in names], tmp_path, replay=True, client=client)
    return {entry.source: (entry, result) for entry, result in results}, waits


# One JSON API, one CSV aggregator, one HTML page: the three families of parsers.
FAMILIES = ["lambda", "skypilot-nebius", "hetzner"]


def test_timeout(tmp_path: Path) -> None:
    out, waits = run(tmp_path, FAMILIES, {url_of("lambda"): httpx.ReadTimeout("read timed out")})
    assert out["lambda"][0].outcome == "timeout" and "ReadTimeout" in out["lambda"][0].message
    assert len(waits) == 3  # retried three times with backoff before giving up
    assert out["skypilot-nebius"][0].outcome == "ok" and out["hetzner"][0].outcome == "ok"


def test_429_honours_retry_after_then_succeeds(tmp_path: Path) -> None:
    busy = httpx.Response(429, headers={"Retry-After": "7"}, json={"error": "slow down"})
    ok = httpx.Response(200, content=recorded("skypilot-nebius"), headers={"content-type": "text/csv"})
    out, waits = run(tmp_path, ["skypilot-nebius"], {url_of("skypilot-nebius"): [busy, ok]})
    entry = out["skypilot-nebius"][0]
    assert entry.outcome == "ok" and waits == [7.0] and entry.retry_waits == [7.0]


def test_500_lands_the_error_body(tmp_path: Path) -> None:
    error = httpx.Response(500, text="internal error")
    out, _ = run(tmp_path, FAMILIES, {url_of("hetzner"): error})
    entry = out["hetzner"][0]
    assert (entry.outcome, entry.http_status) == ("http_error", 500)
    meta = json.loads((tmp_path / entry.raw_path).read_text())  # raw_path is relative to the data directory
    assert meta["parts"][0]["status"] == 500  # what was received is kept
    assert out["lambda"][0].outcome == "ok"


def test_truncated_json(tmp_path: Path) -> None:
    body = recorded("lambda")[:120]
    out, _ = run(tmp_path, FAMILIES, {url_of("lambda"): httpx.Response(200, content=body)})
    entry = out["lambda"][0]
    assert entry.outcome == "parse_error" and "lambda: field 'body'" in entry.message and "not valid JSON" in entry.message
    assert entry.raw_path and entry.bytes == 120
    assert out["hetzner"][0].outcome == "ok"


def test_html_whose_table_moved(tmp_path: Path) -> None:
    moved = recorded("hetzner").replace(b'data-matrix="gpu"', b'data-matrix="dedicated"')
    out, _ = run(tmp_path, FAMILIES, {url_of("hetzner"): httpx.Response(200, content=moved)})
    entry = out["hetzner"][0]
    assert entry.outcome == "parse_error" and "table[data-matrix=gpu]" in entry.message
    renamed = recorded("hetzner").replace(b"<th>GPU</th>", b"<th>Graphics</th>")
    out, _ = run(tmp_path, ["hetzner"], {url_of("hetzner"): httpx.Response(200, content=renamed)})
    assert out["hetzner"][0].outcome == "parse_error" and "th:gpu" in out["hetzner"][0].message


def test_empty_result(tmp_path: Path) -> None:
    header_only = recorded("skypilot-nebius").splitlines()[0] + b"\r\n"
    out, _ = run(tmp_path, FAMILIES, {url_of("skypilot-nebius"): httpx.Response(200, content=header_only),
                                      url_of("lambda"): httpx.Response(200, json={"data": {}})})
    assert out["skypilot-nebius"][0].outcome == "empty" and out["lambda"][0].outcome == "empty"
    assert out["hetzner"][0].outcome == "ok"


def test_negative_price_row_is_rejected_not_fatal(tmp_path: Path) -> None:
    data = json.loads(recorded("lambda"))
    data["data"]["gpu_1x_a10"]["instance_type"]["price_cents_per_hour"] = -75
    out, _ = run(tmp_path, ["lambda"], {url_of("lambda"): httpx.Response(200, json=data)})
    entry, result = out["lambda"]
    assert entry.outcome == "partial" and entry.rejected == 1
    assert "gpu_1x_a10: price must be positive, got -0.75" in entry.rejected_reasons[0]
    assert all(o.instance_type != "gpu_1x_a10" for o in result.offers) and len(result.offers) == 5


def test_zero_price_row_is_not_offered_not_rejected(tmp_path: Path) -> None:
    """A price of exactly 0 is a source's "not offered" (RunPod's securePrice 0, SkyPilot's unpriced
    shapes), in every source: the row is counted as ignored, the fetch stays ok (it was "partial", 1 rejected)."""
    data = json.loads(recorded("lambda"))
    data["data"]["gpu_1x_a10"]["instance_type"]["price_cents_per_hour"] = 0
    out, _ = run(tmp_path, ["lambda"], {url_of("lambda"): httpx.Response(200, json=data)})
    entry, result = out["lambda"]
    assert entry.outcome == "ok" and entry.rejected == 0
    assert entry.ignored == {"not offered (price absent, empty or 0)": 1}
    assert all(o.instance_type != "gpu_1x_a10" for o in result.offers) and len(result.offers) == 5


def test_unknown_currency(tmp_path: Path) -> None:
    data = json.loads(recorded("ovh"))
    data["locale"]["currencyCode"] = "XTS"
    out, _ = run(tmp_path, ["ovh", "lambda"], {url_of("ovh"): httpx.Response(200, json=data)})
    entry = out["ovh"][0]
    assert entry.outcome == "empty" and entry.rejected == 2
    assert "currency 'XTS' has no ECB reference rate (rates of 2024-02-27)" in entry.rejected_reasons[0]
    assert out["lambda"][0].outcome == "ok"


def test_size_cap_refuses_large_responses(tmp_path: Path) -> None:
    client = make_client(ReplayTransport(), sleep=lambda _s: None, min_interval=0.0, max_bytes=1000)
    _, results = fetch_sources([PRICE_SOURCES["skypilot-lambda"], PRICE_SOURCES["lambda"]], tmp_path, replay=True,
                               client=client)
    outcomes = {e.source: e.outcome for e, _ in results}
    assert outcomes["skypilot-lambda"] == "too_large" and "larger than 1,000 bytes" in results[0][0].message


def test_keyed_source_without_key_is_not_configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.sources.landing import run_source

    monkeypatch.delenv("RUNPOD_API_KEY", raising=False)
    client = make_client(ReplayTransport(), sleep=lambda _s: None)
    entry, result = run_source(PRICE_SOURCES["runpod"], client, tmp_path, replay=False)
    assert entry.outcome == "not_configured" and "RUNPOD_API_KEY" in entry.message and result is None
    assert [e.outcome for e in read_log(tmp_path)] == ["not_configured"]


def test_secrets_never_reach_the_landing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.sources.landing import run_source

    monkeypatch.setenv("GCP_API_KEY", "sekrit-key-123")
    client = make_client(ReplayTransport(), sleep=lambda _s: None)
    entry, _ = run_source(PRICE_SOURCES["gcp"], client, tmp_path, replay=False)
    assert entry.outcome == "ok"
    landed = "".join(p.read_text() for p in tmp_path.rglob("*.json")) + (tmp_path / "raw" / "fetch_log.jsonl").read_text()
    assert "sekrit-key-123" not in landed and "key=REDACTED" in landed


def test_conditional_request_unchanged(tmp_path: Path) -> None:
    from pipeline.sources.landing import run_source

    url = url_of("skypilot-yotta")
    body = recorded("skypilot-yotta")
    first = httpx.Response(200, content=body, headers={"etag": '"abc"'})
    transport = ReplayTransport(overrides={url: [first, httpx.Response(304)]})
    client = make_client(transport, sleep=lambda _s: None)
    source = PRICE_SOURCES["skypilot-yotta"]
    assert run_source(source, client, tmp_path, replay=True)[0].outcome == "ok"
    second = make_client(transport, sleep=lambda _s: None)
    entry, result = run_source(source, second, tmp_path, replay=True)
    assert entry.outcome == "unchanged" and result is None
    assert json.loads((tmp_path / "raw" / "skypilot-yotta" / "validators.json").read_text())[url]["etag"] == '"abc"'


def test_no_test_reaches_the_network() -> None:
    with pytest.raises(Exception, match="tried to reach the network"):
        httpx.get("https://example.com/", timeout=2)
