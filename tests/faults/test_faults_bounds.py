"""Time and memory bounds on a fetch, through a real socket on 127.0.0.1 (``harness.FaultServer``):
an endless answer ends at the source's total deadline instead of holding the run and its lock; a gzip bomb sent
as an HTTP 500 (AWS reads error bodies) is never decompressed whole, on any retry; an endless AWS price file of
non-GPU lines (AWS counts only kept GPU lines toward its size cap) ends too. The healthy sources complete."""

from __future__ import annotations

import time
import tracemalloc
import zlib
from functools import lru_cache
from pathlib import Path

import pytest
from harness import FaultServer, host_of, loopback_client

from pipeline.ingest.prices import fetch_sources
from pipeline.sources import PRICE_SOURCES

HEALTHY = ["hetzner"]


def run(tmp_path: Path, client, names: list[str]) -> dict:  # type: ignore[no-untyped-def]
    _, results = fetch_sources([PRICE_SOURCES[n] for n in names], tmp_path, replay=True, client=client)
    return {entry.source: (entry, result) for entry, result in results}


def endless(piece: bytes, pause: float) -> object:
    """A chunked 200 that never ends: ``piece`` every ``pause`` seconds (below any read timeout and size cap)."""
    def behave(h) -> None:  # type: ignore[no-untyped-def]
        h.send_response(200)
        h.send_header("content-type", "text/csv")
        h.send_header("transfer-encoding", "chunked")
        h.end_headers()
        try:
            while True:
                h.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                h.wfile.flush()
                time.sleep(pause)
        except OSError:
            pass  # the client hung up at its deadline: expected
        h.close_connection = True
    return behave


@lru_cache(maxsize=1)
def gzip_bomb() -> bytes:
    """1 GiB of zeros gzip-compressed (about 1 MiB), built in 1 MiB steps so building it costs no GiB."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(2**20)
    body = b"".join(packer.compress(block) for _ in range(1024)) + packer.flush()
    assert len(body) < 2 * 2**20
    return body


def bomb_500(h) -> None:  # type: ignore[no-untyped-def]
    body = gzip_bomb()
    h.send_response(500)
    h.send_header("content-encoding", "gzip")
    h.send_header("content-type", "text/plain")
    h.send_header("content-length", str(len(body)))
    h.end_headers()
    try:
        h.wfile.write(body)
    except OSError:
        pass


def test_endless_stream_ends_at_the_source_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """R01 a provider streams forever, slowly (20 bytes every 0.2 s: no read timeout, never the size cap)."""
    monkeypatch.setenv("VRAMLAB_SOURCE_DEADLINE", "3")
    with FaultServer() as server:
        server.behaviours[host_of("lambda")] = endless(b'{"data": [1, 2, 3]} ', 0.2)
        started = time.monotonic()
        out = run(tmp_path, loopback_client(server, retries=1), ["lambda", *HEALTHY])
        elapsed = time.monotonic() - started
    entry = out["lambda"][0]
    assert entry.outcome == "timeout" and "deadline" in entry.message, entry
    assert elapsed < 3 + 60, elapsed  # the deadline, plus at most one read timeout and the healthy source
    assert out["hetzner"][0].outcome == "ok"


def test_aws_endless_non_gpu_lines_end_at_the_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """R02 an AWS price file of endless non-GPU lines: none is kept (so the kept-lines cap never fires), the
    total deadline ends it."""
    monkeypatch.setenv("VRAMLAB_SOURCE_DEADLINE", "3")
    with FaultServer() as server:
        server.behaviours[host_of("aws")] = endless(b'"m5.large","OnDemand","Linux","0.096"\n' * 50, 0.05)
        started = time.monotonic()
        out = run(tmp_path, loopback_client(server, retries=1), ["aws", *HEALTHY])
        elapsed = time.monotonic() - started
    entry = out["aws"][0]
    assert entry.outcome == "timeout" and "deadline" in entry.message, entry
    assert elapsed < 3 + 60, elapsed


def test_gzip_bomb_as_aws_500_is_never_decompressed_whole(tmp_path: Path) -> None:
    """R03 a 1 MiB gzip body that unpacks to 1 GiB, sent as AWS's HTTP 500 on every retry: the error is kept
    truncated; Python's allocations peak far below 1 GiB (before: 2.35 GiB, the body decompressed per retry)."""
    gzip_bomb()  # built before measuring
    with FaultServer() as server:
        server.behaviours[host_of("aws")] = bomb_500
        tracemalloc.start()
        try:
            out = run(tmp_path, loopback_client(server, retries=2), ["aws", *HEALTHY])
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    entry = out["aws"][0]
    assert (entry.outcome, entry.http_status) == ("http_error", 500), entry
    assert peak < 256 * 2**20, f"peak {peak / 2**20:.0f} MiB"
    assert out["hetzner"][0].outcome == "ok"
