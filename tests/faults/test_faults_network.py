"""Network faults, through a real socket: a fault-injecting server on 127.0.0.1 answers for every
provider host (``harness.LoopbackTransport``). Expected for each: the failing source ends in a specific
fetch-log outcome with a clear message, whatever it received is landed, and the healthy sources complete."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest
from harness import (
    FaultServer,
    answer,
    hang,
    host_of,
    loopback_client,
    replay_client,
    reset_connection,
    sequence,
    serve_recorded,
    trickle,
    url_of,
)

from pipeline.ingest.prices import fetch_sources
from pipeline.sources import PRICE_SOURCES
from pipeline.sources.landing import read_log

HEALTHY = ["skypilot-nebius", "hetzner"]


def run(tmp_path: Path, client, names: list[str]) -> dict:  # type: ignore[no-untyped-def]
    _, results = fetch_sources([PRICE_SOURCES[n] for n in names], tmp_path, replay=True, client=client)
    return {entry.source: (entry, result) for entry, result in results}


def assert_healthy(out: dict) -> None:
    for name in HEALTHY:
        assert out[name][0].outcome == "ok" and out[name][0].offers > 0, out[name][0]


def test_timeout(tmp_path: Path) -> None:
    """F01 provider never answers: ``timeout`` after the configured retries; the others are not held up."""
    with FaultServer() as server:
        server.behaviours[host_of("lambda")] = hang(3.0)
        started = time.monotonic()
        out = run(tmp_path, loopback_client(server, timeout=0.3, retries=1), ["lambda", *HEALTHY])
        elapsed = time.monotonic() - started
    entry = out["lambda"][0]
    assert entry.outcome == "timeout" and "ReadTimeout" in entry.message
    assert len(entry.retry_waits) == 1  # one retry, then it gave up
    assert elapsed < 15  # bounded: 2 attempts x 0.3 s, not the 3 s the server hangs, x sources
    assert_healthy(out)


def test_connection_reset(tmp_path: Path) -> None:
    """F02 connection reset by peer on every attempt: ``network_error`` naming the error, nothing landed."""
    with FaultServer() as server:
        server.behaviours[host_of("lambda")] = reset_connection
        out = run(tmp_path, loopback_client(server, retries=2), ["lambda", *HEALTHY])
    entry = out["lambda"][0]
    assert entry.outcome == "network_error"
    assert any(k in entry.message for k in ("RemoteProtocolError", "ReadError", "ConnectError")), entry.message
    assert len(entry.retry_waits) == 2 and entry.raw_path is None
    assert_healthy(out)


def test_429_retry_after_then_ok(tmp_path: Path) -> None:
    """F03 429 with Retry-After: 1: waits that second (honoured, not the backoff), then succeeds."""
    with FaultServer() as server:
        busy = answer(429, b'{"error": "slow down"}', {"retry-after": "1"})
        server.behaviours[host_of("lambda")] = sequence(busy, lambda h: serve_recorded(h, url_of("lambda")))
        out = run(tmp_path, loopback_client(server), ["lambda", *HEALTHY])
    entry = out["lambda"][0]
    assert entry.outcome == "ok" and entry.offers > 0 and entry.retry_waits == [1.0]
    assert_healthy(out)


def test_500_lands_error_body(tmp_path: Path) -> None:
    """F04 HTTP 500 on every attempt: ``http_error`` 500 after the retries, the error body landed."""
    with FaultServer() as server:
        server.behaviours[host_of("lambda")] = answer(500, b"internal error: db down")
        out = run(tmp_path, loopback_client(server, retries=2), ["lambda", *HEALTHY])
    entry = out["lambda"][0]
    assert (entry.outcome, entry.http_status) == ("http_error", 500) and len(entry.retry_waits) == 2
    meta = json.loads((tmp_path / entry.raw_path).read_text())
    assert meta["parts"][0]["status"] == 500 and meta["parts"][0]["size"] == len(b"internal error: db down")
    assert_healthy(out)


def test_503_storm_across_sources(tmp_path: Path) -> None:
    """F05 a 503 storm: several providers answer 503 at once. Each is retried with exponential backoff and
    recorded as ``http_error`` 503; the sources outside the storm complete."""
    with FaultServer() as server:
        for name in ("lambda", "runpod", "verda"):
            server.behaviours[host_of(name)] = answer(503, b"Service Unavailable")
        names = ["lambda", "runpod", "verda", *HEALTHY]
        out = run(tmp_path, loopback_client(server, retries=3, backoff=0.01), names)
    for name in ("lambda", "runpod", "verda"):
        entry = out[name][0]
        assert (entry.outcome, entry.http_status) == ("http_error", 503), entry
        assert len(entry.retry_waits) == 3
        assert entry.retry_waits[2] > entry.retry_waits[0]  # 0.01 x (1, 2, 4) plus jitter of at most 0.01
    assert_healthy(out)
    assert [e.outcome for e in read_log(tmp_path)].count("http_error") == 3


def test_trickle_past_size_cap_redacts_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """F06 a body dribbled out past the size cap, on a keyed URL: refused while streaming (``too_large``), and
    the message carries no key. Before the fix the unredacted URL (``&key=<GCP key>``) reached
    raw/fetch_log.jsonl, DuckDB and the logs."""
    secret = "AIzaSyFAKE-gcp-key-for-tests-0123456789"
    monkeypatch.setenv("GCP_API_KEY", secret)
    with FaultServer() as server:
        server.behaviours[host_of("gcp")] = trickle(400_000)
        out = run(tmp_path, loopback_client(server, max_bytes=100_000), ["gcp", *HEALTHY])
    entry = out["gcp"][0]
    assert entry.outcome == "too_large" and "larger than 100,000 bytes" in entry.message
    assert secret not in entry.message and "key=REDACTED" in entry.message
    assert secret not in (tmp_path / "raw" / "fetch_log.jsonl").read_text()
    assert_healthy(out)


@pytest.mark.parametrize("error", [
    httpx.ConnectError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate"),
    httpx.ConnectError("[Errno -2] Name or service not known"),
], ids=["tls", "dns"])
def test_tls_and_dns_failure(tmp_path: Path, error: Exception) -> None:
    """F07 TLS handshake failure / DNS failure, raised at the transport as httpx raises them: retried, then
    ``network_error`` with the cause in the message."""
    out = run(tmp_path, replay_client({url_of("lambda"): error}, retries=2), ["lambda", *HEALTHY])
    entry = out["lambda"][0]
    assert entry.outcome == "network_error" and "ConnectError" in entry.message
    assert str(error) in entry.message and len(entry.retry_waits) == 2
    assert_healthy(out)
