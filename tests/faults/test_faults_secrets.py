"""Secrets at rest: a provider's error answer that echoes the API key back (a 404 page repeating the requested URL
with ``?key=``, a GraphQL error quoting the bearer key) is landed in ``raw/`` like every answer; the landed copy
must not keep the key. The sources run for real (``run_source``, the landing, the DuckDB loaders) against a
loopback server that echoes whatever key it was sent; afterwards every file of the data directory (gzip bodies
unpacked, the DuckDB file's own bytes) and of the Dagster instance is searched for the keys."""

from __future__ import annotations

import gzip
import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import dagster as dg
import pytest
from harness import (
    FaultServer,
    db_rows,
    duckdb_containing,
    files_containing,
    host_of,
    loopback_client,
    materialize,
    price_assets,
    send,
)

GCP_KEY = "AIzaSyFAKEgcpKEYechoedBACK0042"
RUNPOD_KEY = "rpFAKEkeyECHOEDinGRAPHQL0043"


def echo_url_404(h: BaseHTTPRequestHandler) -> None:
    """What a web front end's 404 page does: repeat the URL it was asked for, query string and all."""
    original = h.headers.get("x-original-url", "")
    send(h, 404, f"<html><body><h1>Not Found</h1><p>The requested URL {original} was not found on this "
                 f"server.</p></body></html>".encode(), {"content-type": "text/html"})


def echo_key_graphql_error(h: BaseHTTPRequestHandler) -> None:
    """A GraphQL API refusing the key by quoting it (status 200 with ``errors``, as GraphQL servers answer)."""
    key = h.headers.get("authorization", "").removeprefix("Bearer ")
    body = {"errors": [{"message": f"api key {key} not authorized for gpuTypes",
                        "extensions": {"code": "UNAUTHENTICATED", "key": key}}]}
    send(h, 200, json.dumps(body).encode(), {"content-type": "application/json"})


def test_echoed_keys_never_reach_the_landing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """S03 GCP answers 404 echoing its URL with ``?key=``; RunPod answers a GraphQL error quoting the key. Both
    answers are landed (scrubbed: ``REDACTED`` where the key was), both fetches fail as they should, and no byte
    of either key is anywhere under the data directory, in DuckDB or in the Dagster instance. Before the fix both
    keys were kept whole in the landed ``.body.gz`` files."""
    monkeypatch.setenv("GCP_API_KEY", GCP_KEY)
    monkeypatch.setenv("RUNPOD_API_KEY", RUNPOD_KEY)
    data, home = tmp_path / "data", tmp_path / "home"
    with FaultServer() as server:
        server.behaviours[host_of("gcp")] = echo_url_404
        server.behaviours[host_of("runpod")] = echo_key_graphql_error
        home.mkdir()
        instance = dg.DagsterInstance.local_temp(str(home))
        try:
            result = materialize(price_assets(["gcp", "runpod", "lambda"]), data, monkeypatch,
                                 client=lambda: loopback_client(server, sleep=lambda _s: None), instance=instance)
        finally:
            instance.dispose()
        assert any(host_of("gcp") in hit and "key=" + GCP_KEY in hit for hit in server.hits)  # the key was sent
    assert result.success
    db = data / "vramlab.duckdb"
    outcomes = dict(db_rows(db, "SELECT source, outcome FROM fetch_log WHERE source IN ('gcp', 'runpod')"))
    assert outcomes == {"gcp": "http_error", "runpod": "parse_error"}, outcomes
    bodies = {}
    for source in ("gcp", "runpod"):
        landed = sorted((data / "raw" / source).rglob("*.body.gz"))
        assert landed, f"{source}: the error answer is landed"
        bodies[source] = b"".join(gzip.decompress(p.read_bytes()) for p in landed)
    assert b"key=REDACTED" in bodies["gcp"] and b"was not found" in bodies["gcp"]  # the page kept, the key not
    assert b"api key REDACTED not authorized" in bodies["runpod"]
    for name, key in (("GCP_API_KEY", GCP_KEY), ("RUNPOD_API_KEY", RUNPOD_KEY)):
        assert files_containing(data, key) == [], name  # raw bodies unpacked, metadata, fetch log, the DuckDB file
        assert duckdb_containing(db, key) == [], name
        assert files_containing(home, key) == [], name  # Dagster's event log and compute logs
