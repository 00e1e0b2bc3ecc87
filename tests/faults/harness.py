"""Shared machinery of the fault matrix: recorded payloads, a fault-injecting HTTP server on
127.0.0.1, clients that reach it, Dagster runs of the real assets, and scanners for secrets and counts.

Only the network boundary is replaced: the replay transport serves recorded (or deliberately broken) answers,
or a loopback transport sends every request to a local server that misbehaves on purpose. Everything else is
the code users run: ``run_source``, the landing, the DuckDB loaders on a real file, ``dagster.materialize``.
"""

from __future__ import annotations

import gzip
import json
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import duckdb
import httpx

from pipeline.sources.http import SourceClient, make_client
from pipeline.sources.replay import REPLAY_ROOT, ReplayTransport

ROOT = Path(__file__).resolve().parents[2]
PRICE_MANIFEST = json.loads((REPLAY_ROOT / "prices" / "manifest.json").read_text())["responses"]
HUB_MANIFEST = json.loads((REPLAY_ROOT / "hub" / "manifest.json").read_text())["responses"]
#: an HTML error page as a CDN or a login wall serves it with status 200
HTML_PAGE = (b"<!DOCTYPE html><html><head><title>Service temporarily unavailable</title></head>"
             b"<body><h1>We'll be back soon</h1><p>Maintenance in progress.</p></body></html>")


def url_of(source: str, nth: int = 0) -> str:
    return [e["url"] for e in PRICE_MANIFEST if e["source"] == source][nth]


def host_of(source: str) -> str:
    """The host a source fetches from (the fault server's behaviours key on it)."""
    return httpx.URL(url_of(source)).host


def recorded(source: str, nth: int = 0) -> bytes:
    entry = [e for e in PRICE_MANIFEST if e["source"] == source][nth]
    return (REPLAY_ROOT / "prices" / entry["file"]).read_bytes()


def replay_client(overrides: dict[str, Any] | None = None, **kwargs: Any) -> SourceClient:
    """A client replaying the recordings, with some URLs answering differently. Backoff is shortened through
    the client's settings (not by mocking): the retry code still runs and still sleeps."""
    kwargs.setdefault("sleep", lambda _s: None)
    kwargs.setdefault("min_interval", 0.0)
    kwargs.setdefault("backoff", 0.01)
    return make_client(ReplayTransport(overrides=overrides or {}), **kwargs)


# ---------------------------------------------------------------------------------------------------------------
# A fault-injecting server on 127.0.0.1 and a transport that sends every request there


Behaviour = Callable[[BaseHTTPRequestHandler], None]


class FaultServer:
    """A threaded HTTP server on 127.0.0.1. ``behaviours`` maps a request path prefix (the original host + path,
    e.g. ``cloud.lambdalabs.com/api/v1``) to a function answering the request; everything else is served from
    the replay recordings, so healthy sources stay healthy."""

    def __init__(self) -> None:
        self.behaviours: dict[str, Behaviour] = {}
        self.hits: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802
                original = self.headers.get("x-original-url", "")
                length = int(self.headers.get("content-length") or 0)
                self.body = self.rfile.read(length) if length else b""  # drain it: the connection is reused
                server.hits.append(original)
                for prefix, behave in server.behaviours.items():
                    if prefix in original:
                        behave(self)
                        return
                serve_recorded(self, original)

            do_POST = do_GET

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FaultServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


_REPLAY = ReplayTransport()


def serve_recorded(handler: BaseHTTPRequestHandler, original_url: str) -> None:
    response = _REPLAY.handle_request(httpx.Request(handler.command, original_url,
                                                    content=getattr(handler, "body", b"")))
    body = response.read()
    send(handler, response.status_code, body, {"content-type": response.headers.get("content-type", "")})


def send(handler: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
    handler.send_response(status)
    for k, v in (headers or {}).items():
        handler.send_header(k, v)
    handler.send_header("content-length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def answer(status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> Behaviour:
    return lambda h: send(h, status, body, headers)


def sequence(*behaviours: Behaviour) -> Behaviour:
    """One behaviour per request, the last one repeated."""
    queue = list(behaviours)

    def behave(h: BaseHTTPRequestHandler) -> None:
        (queue.pop(0) if len(queue) > 1 else queue[0])(h)

    return behave


def hang(seconds: float) -> Behaviour:
    def behave(h: BaseHTTPRequestHandler) -> None:
        time.sleep(seconds)
        try:
            send(h, 200, b"{}")
        except OSError:
            pass

    return behave


def reset_connection(h: BaseHTTPRequestHandler) -> None:
    """Close the socket with an RST, no response at all (what a crashing proxy does)."""
    h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    h.connection.close()
    h.close_connection = True


def trickle(total: int, chunk: int = 4096, pause: float = 0.001) -> Behaviour:
    """A chunked body dribbled out in small pieces, longer than any size cap we set; no content-length."""

    def behave(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("content-type", "application/json")
        h.send_header("transfer-encoding", "chunked")
        h.end_headers()
        sent = 0
        try:
            while sent < total:
                piece = b"[" + b"1," * (chunk // 2 - 1) + b"1]"
                h.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                h.wfile.flush()
                sent += len(piece)
                time.sleep(pause)
            h.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass  # the client hung up once past its cap: expected
        h.close_connection = True

    return behave


class LoopbackTransport(httpx.BaseTransport):
    """Sends every request to the fault server on 127.0.0.1 (the original URL travels in a header): the real
    httpx socket code runs, with real timeouts, resets and partial reads."""

    def __init__(self, port: int, timeout: float = 5.0):
        self.port = port
        self.inner = httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        local = httpx.URL(f"http://127.0.0.1:{self.port}{request.url.raw_path.decode()}")
        headers = dict(request.headers)
        headers["x-original-url"] = str(request.url)
        headers.pop("host", None)
        forwarded = httpx.Request(request.method, local, headers=headers, content=request.content,
                                  extensions=request.extensions)
        return self.inner.handle_request(forwarded)

    def close(self) -> None:
        self.inner.close()


def loopback_client(server: FaultServer, **kwargs: Any) -> SourceClient:
    kwargs.setdefault("sleep", time.sleep)
    kwargs.setdefault("min_interval", 0.0)
    kwargs.setdefault("backoff", 0.01)
    return make_client(LoopbackTransport(server.port), **kwargs)


# ---------------------------------------------------------------------------------------------------------------
# Dagster runs of the real assets


def resources_for(data_dir: Path, db: Path | None = None) -> dict[str, Any]:
    from dagster_duckdb import DuckDBResource

    from pipeline.resources import VramlabSettings

    db = db or data_dir / "vramlab.duckdb"
    return {"vramlab": VramlabSettings(data_dir=str(data_dir), db_path=str(db)),
            "duckdb": DuckDBResource(database=str(db))}


class Selection(list):
    """Assets to pass to ``dagster.materialize`` plus the asset keys to select (the price sources are one
    multi-asset step: a subset is chosen by key)."""

    selection: list[str] | None = None


def price_assets(sources: list[str] | None = None, *, core: bool = True) -> Selection:
    """The ECB asset, the raw assets of ``sources`` (all when None) and the core price assets."""
    from pipeline.assets import core as core_assets
    from pipeline.assets.raw import ECB_ASSET, PRICE_ASSETS, asset_name

    out = Selection([ECB_ASSET, *PRICE_ASSETS])
    keys = [ECB_ASSET.key.to_user_string()]
    keys += [k.to_user_string() for a in PRICE_ASSETS for k in a.keys
             if sources is None or k.to_user_string() in {asset_name(s) for s in sources}]
    if core:
        extra = [core_assets.core__gpus, core_assets.core__fetch_log, core_assets.core__price_observations,
                 core_assets.core__offers_current]
        out += extra
        keys += [a.key.to_user_string() for a in extra]
    out.selection = keys
    return out


def materialize(assets: list, data_dir: Path, monkeypatch: Any = None, client: Callable[[], SourceClient] | None = None,
                instance: Any = None, **kwargs: Any) -> Any:
    """``dagster.materialize`` of real assets into ``data_dir``; ``client`` replaces the raw assets' network
    client (the network boundary) when given."""
    import dagster as dg

    if client is not None:
        monkeypatch.setattr("pipeline.assets.raw.client_for", lambda *_a, **_k: client())
    kwargs.setdefault("raise_on_error", False)
    selection = getattr(assets, "selection", None)
    if selection is not None:
        kwargs.setdefault("selection", selection)
    return dg.materialize(list(assets), resources=resources_for(data_dir), instance=instance, **kwargs)


def checks(result: Any) -> dict[str, bool]:
    return {e.check_name: e.passed for e in result.get_asset_check_evaluations()}


def materialized(result: Any) -> set[str]:
    return {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}


def db_rows(db: Path, sql: str, params: list | None = None) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def count(db: Path, table: str) -> int:
    return db_rows(db, f"SELECT count(*) FROM {table}")[0][0]


# ---------------------------------------------------------------------------------------------------------------
# Secret scanning


def files_containing(root: Path, needle: str) -> list[str]:
    """Every file under ``root`` whose bytes (gunzipped when gzip) contain ``needle``; DuckDB files are
    scanned table by table separately (:func:`duckdb_containing`), their pages may be compressed."""
    hits = []
    raw = needle.encode()
    for path in root.rglob("*"):
        if not path.is_file():
            continue
        data = path.read_bytes()
        if path.suffix == ".gz":
            try:
                data = gzip.decompress(data)
            except OSError:
                pass
        if raw in data:
            hits.append(str(path.relative_to(root)))
    return hits


def duckdb_containing(db: Path, needle: str) -> list[str]:
    con = duckdb.connect(str(db), read_only=True)
    hits = []
    try:
        tables = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()]
        for table in tables:
            cols = [r[0] for r in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]).fetchall()]
            where = " OR ".join(f"CAST({c} AS VARCHAR) LIKE ?" for c in cols)
            n = con.execute(f"SELECT count(*) FROM {table} WHERE {where}", [f"%{needle}%"] * len(cols)).fetchall()[0][0]
            if n:
                hits.append(f"{table}: {n} rows")
    finally:
        con.close()
    return hits


# ---------------------------------------------------------------------------------------------------------------
# Comparing two runs' results: DuckDB tables row for row, published files content for content


VOLATILE = {"computed_at", "generated_at", "snapshot_id", "loaded_at", "snapshot", "created_at", "latest",
            "updated_at", "generatedAt", "snapshotId", "computedAt", "updatedAt", "code_version", "updated",
            "recorded_at"}


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in VOLATILE}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _table(con: duckdb.DuckDBPyConnection, source: str) -> list[tuple]:
    cols = [d[0] for d in con.execute(f"SELECT * FROM {source} LIMIT 0").description if d[0] not in VOLATILE]
    return con.execute(f"SELECT {', '.join(cols)} FROM {source} ORDER BY ALL").fetchall()


def snapshot_content(latest: Path) -> dict[str, Any]:
    """Every published file's content, volatile fields removed (Parquet read back with DuckDB, as consumers do)."""
    con = duckdb.connect()
    out: dict[str, Any] = {}
    for path in sorted(latest.rglob("*")):
        rel = str(path.relative_to(latest))
        if path.is_dir() or rel == "manifest.json":
            continue
        if path.suffix == ".parquet":
            out[rel] = _table(con, f"read_parquet('{path}')")
        elif path.suffix == ".json":
            out[rel] = _strip(json.loads(path.read_text()))
    manifest = json.loads((latest / "manifest.json").read_text())
    out["manifest.sources"] = manifest["sources"]
    out["manifest.row_counts"] = manifest["row_counts"]
    return out


def table_rows(db: Path) -> dict[str, list[tuple]]:
    """Every table of the database but ``schema_version``, row for row (volatile columns aside)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        names = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables WHERE table_name <> "
                                           "'schema_version' ORDER BY 1").fetchall()]
        return {t: _table(con, t) for t in names}
    finally:
        con.close()


#: tables a whole replay run fills (the others, e.g. price_changes, stay empty after one run)
FILLED_BY_ONE_RUN = ("fetch_log", "price_observations", "offers_current", "offer_quality", "models",
                     "model_revisions", "gpus", "sizing", "cheapest_setups", "gpu_price_reference")


# ---------------------------------------------------------------------------------------------------------------
# Two whole runs of the same recordings, done differently (in one process; on Celery workers; partitioned), compared


#: columns that say when a run did its work, not what it found (measured: the only ones that differ between two
#: runs of the same recordings besides VOLATILE's stamps): when a fetch finished and its line in fetch_log.jsonl
#: (concurrent fetches and partition runs finish in any order), when the Hub record was fetched, the export cache's
#: key (it hashes that time), when a migration was applied. Fetch start times (the recordings' capture times in
#: replay), landed paths, payload hashes and every published value are compared.
RUN_TIMES = frozenset({"finished_at", "fetched_at", "cache_key", "applied_at", "fetch_seq"}) | VOLATILE


#: the models the whole-refresh equality tests track: one of each kind the steps treat apart (dense with GGUF
#: variants, a pre-quantized MoE with its base model, MLA, hybrid linear attention, a spec-only model sharded over
#: many GPUs). Both sides of a comparison run them (a data directory's own ``watchlist.json``), so each partitioned
#: run has 5 model partitions, not the packaged watchlist's every model.
SMALL_WATCHLIST = ("qwen3-8b", "qwen3-30b-a3b-fp8", "deepseek-v2-lite-chat", "qwen3-next-80b-a3b-thinking",
                   "kimi-k3.1-pro")


def track_few_models(*data_dirs: Path) -> list[str]:
    """Give each data directory its own watchlist of the :data:`SMALL_WATCHLIST` entries of the packaged one
    (what ``vramlab track`` writes); returns their ids."""
    from pipeline.data_dir import DataDir
    from pipeline.sources.huggingface import WATCHLIST

    packaged = json.loads(WATCHLIST.read_text())
    few = {**packaged, "models": [m for m in packaged["models"] if m["id"] in SMALL_WATCHLIST]}
    assert len(few["models"]) == len(SMALL_WATCHLIST), "a small-watchlist model left the packaged watchlist"
    for data in data_dirs:
        DataDir(data).watchlist.parent.mkdir(parents=True, exist_ok=True)
        DataDir(data).watchlist.write_text(json.dumps(few, indent=1))
    return [m["id"] for m in few["models"]]


def vramlab_run(data: Path, home: Path) -> None:
    """``vramlab run`` of the replayed recordings into ``data``, in its own process (the reference run)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(ROOT), "VRAMLAB_DATA_DIR": str(data), "DAGSTER_HOME": str(home)}
    for name in ("VRAMLAB_DB", "VRAMLAB_PARTS_DIR", "VRAMLAB_LIVE", "VRAMLAB_DISCOVERY"):
        env.pop(name, None)
    out = subprocess.run([str(Path(sys.executable).parent / "vramlab"), "run", "--quiet"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=1800)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]


def comparable_rows(db: Path, skip: tuple[str, ...] = ()) -> dict[str, list[tuple]]:
    """Every table but ``skip`` and ``schema_version``, row for row, without RUN_TIMES columns. A Hub attempt's start
    time is the clock's (a replayed price fetch's is its recording's), and its landed file is named after it."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        out = {}
        for table in table_rows(db):
            if table in skip:
                continue
            cols = [d[0] for d in con.execute(f"SELECT * FROM {table} LIMIT 0").description if d[0] not in RUN_TIMES]
            if table == "fetch_log":
                cols = [f"CASE WHEN starts_with(source, 'hub:') THEN NULL ELSE {c} END AS {c}"
                        if c in ("started_at", "raw_path") else c for c in cols]
            out[table] = con.execute(f"SELECT {', '.join(cols)} FROM {table} ORDER BY ALL").fetchall()
        return out
    finally:
        con.close()


def _published_by_day(data: Path) -> dict[str, Any]:
    """The published files; history parts, named after the snapshot that wrote them, keyed by day."""
    import re

    content = snapshot_content((data / "exports" / "latest").resolve())
    return {re.sub(r"part-[0-9TZ]+\.parquet$", "part.parquet", rel): v for rel, v in content.items()}


def assert_same_results(ours: Path, theirs: Path, skip: tuple[str, ...] = ()) -> None:
    """Two data directories hold the same tables (``skip`` aside) and the same published files."""
    expected, got = comparable_rows(ours / "vramlab.duckdb", skip), comparable_rows(theirs / "vramlab.duckdb", skip)
    assert all(expected[t] for t in FILLED_BY_ONE_RUN)
    assert sorted(got) == sorted(expected)
    for table, rows in expected.items():
        assert got[table] == rows, table
    a, b = _published_by_day(ours), _published_by_day(theirs)
    assert sorted(a) == sorted(b)
    for rel, content in a.items():
        assert b[rel] == content, rel
