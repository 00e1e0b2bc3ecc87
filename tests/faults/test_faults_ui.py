"""The UI keeps strangers out. A real webserver process, started with the command ``vramlab serve`` starts it
with (``pipeline.ops.serve.webserver_command``: Dagster's webserver behind vramlab's guard, read-only), on
loopback; real HTTP requests shaped as a hostile page's would be: a DNS-rebound name in ``Host``, a mutation as a
plain GET, a cross-site form or ``fetch`` (``Origin`` of another site, a content type that needs no preflight),
a cross-site websocket, and a well-formed ``launchRun`` with the run config of the attacker's choice. Then the
second line of defence without the server: a run whose own run config points the data directory outside the
data root is refused before any asset runs."""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import httpx
import pytest
from harness import ROOT

PROXY_NAME = "vramlab.example.org"  # the name an authenticating reverse proxy would forward
STOP_SCHEDULE = 'mutation { stopRunningSchedule(id: "x", scheduleSelectorId: "x") { __typename } }'
LAUNCH = """mutation Launch($config: RunConfigData) {
  launchRun(executionParams: {selector: {repositoryLocationName: "vramlab", repositoryName: "__repository__",
                                         jobName: "vramlab_refresh"}, runConfigData: $config}) {
    __typename ... on UnauthorizedError { message } ... on PythonError { message }
  }
}"""
RUNS = "{ runsOrError { ... on Runs { results { runId } } } }"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from pipeline.ops.serve import webserver_command

    tmp = tmp_path_factory.mktemp("ui")
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DAGSTER_HOME": str(tmp / "home"),
           "VRAMLAB_DATA_DIR": str(tmp / "data"), "VRAMLAB_UI_BIND_HOST": "127.0.0.1",
           "VRAMLAB_UI_ALLOWED_HOSTS": PROXY_NAME}
    (tmp / "home").mkdir()
    command = webserver_command("127.0.0.1", port)
    assert "--read-only" in command and "--read-only" not in webserver_command("127.0.0.1", port, allow_launch=True)
    log = open(tmp / "webserver.log", "wb")  # noqa: SIM115 - closed in the finally below
    proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300  # loads the code location: seconds idle, a minute or two on a busy box
        while True:
            assert proc.poll() is None, (tmp / "webserver.log").read_text()[-3000:]
            try:
                if httpx.get(f"{base}/server_info", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "webserver did not come up"
            time.sleep(0.5)  # polling the condition above, not a fixed wait
        yield {"base": base, "port": port, "tmp": tmp}
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
        assert _group_gone(proc.pid, within=30), "a process of the webserver's group is still alive"


def _group_gone(pgid: int, within: float) -> bool:
    """Whether no process of group ``pgid`` is left (the webserver's code server included), polled up to ``within``."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.2)
    return False


def _post(ui: dict, query: str, variables: dict | None = None, **headers: str) -> httpx.Response:
    return httpx.post(f"{ui['base']}/graphql", json={"query": query, "variables": variables or {}},
                      headers=headers, timeout=60)


def test_rebinding_host_is_refused(ui: dict) -> None:
    """W01 DNS rebinding: the same loopback socket reached under a foreign name is refused, for pages and for
    GraphQL; loopback names and the configured proxy name are answered."""
    for host in ("evil.example", f"evil.example:{ui['port']}", "127.0.0.1.evil.example", "localhost.evil.example"):
        page = httpx.get(f"{ui['base']}/server_info", headers={"Host": host}, timeout=30)
        assert page.status_code == 421 and "DNS rebinding" in page.text, (host, page.status_code, page.text[:200])
        gql = _post(ui, RUNS, Host=host)
        assert gql.status_code == 421, host
    for host in (f"127.0.0.1:{ui['port']}", f"localhost:{ui['port']}", f"[::1]:{ui['port']}", PROXY_NAME):
        assert _post(ui, RUNS, Host=host).json()["data"]["runsOrError"]["results"] == [], host


def test_mutation_sent_as_get_is_refused(ui: dict) -> None:
    """W02 a mutation as a plain GET (a link, an ``<img src>``) is refused; a GET query still answers."""
    refused = httpx.get(f"{ui['base']}/graphql", params={"query": STOP_SCHEDULE}, timeout=30)
    assert refused.status_code == 405 and "queries only" in refused.text, refused.text[:300]
    named = httpx.get(f"{ui['base']}/graphql", params={"query": "query A { version } mutation B { logTelemetry("
                                                                "action: \"x\", clientTime: \"1\", clientId: \"x\", "
                                                                "metadata: \"{}\") { __typename } }",
                                                       "operationName": "A"}, timeout=30)
    assert named.status_code == 405  # a mutation hidden beside a query in one document
    assert httpx.get(f"{ui['base']}/graphql", params={"query": "{ version }"}, timeout=30).json()["data"]["version"]


def test_cross_site_requests_are_refused(ui: dict) -> None:
    """W03 what a page on another site can send without a CORS preflight: a form POST (urlencoded or text/plain,
    the query in the URL), or a JSON ``fetch`` carrying its Origin; all refused before Dagster sees them."""
    url = f"{ui['base']}/graphql"
    form = httpx.post(url, params={"query": STOP_SCHEDULE}, data={"x": "1"}, timeout=30)
    assert form.status_code == 415, form.text[:300]
    plain = httpx.post(url, params={"query": STOP_SCHEDULE}, content=b"x",
                       headers={"Content-Type": "text/plain; application/json"}, timeout=30)
    assert plain.status_code == 415, plain.text[:300]
    foreign = _post(ui, RUNS, Origin="http://evil.example")
    assert foreign.status_code == 403 and "cross-site" in foreign.text
    null_origin = _post(ui, RUNS, Origin="null")  # a sandboxed iframe, a file:// page
    assert null_origin.status_code == 403
    same = _post(ui, RUNS, Origin=ui["base"])  # the UI's own requests carry its own origin
    assert same.status_code == 200 and "errors" not in same.json()


def _websocket_status(ui: dict, origin: str) -> str:
    """The status line the server answers a graphql-ws upgrade from ``origin`` with."""
    key = base64.b64encode(os.urandom(16)).decode()
    request = (f"GET /graphql HTTP/1.1\r\nHost: 127.0.0.1:{ui['port']}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
               f"Sec-WebSocket-Protocol: graphql-ws\r\nOrigin: {origin}\r\n\r\n")
    with socket.create_connection(("127.0.0.1", ui["port"]), timeout=30) as s:
        s.sendall(request.encode())
        return s.recv(4096).decode("latin-1").split("\r\n", 1)[0]


def test_cross_site_websocket_is_refused(ui: dict) -> None:
    """W04 a page on another site opening the GraphQL websocket (subscriptions) is refused; the UI's own is not."""
    assert " 101 " not in _websocket_status(ui, "http://evil.example")
    assert " 101 " in _websocket_status(ui, ui["base"])


def test_read_only_ui_refuses_to_launch(ui: dict) -> None:
    """W05 a well-formed launch that passes every header check (as a local script, or a page that got past
    them, would send it), with a run config pointing the data directory elsewhere: refused by read-only mode,
    and no run exists afterwards."""
    outside = ui["tmp"] / "attacker"
    config = {"resources": {"vramlab": {"config": {"data_dir": str(outside), "db_path": str(outside / "x.duckdb")}}}}
    answer = _post(ui, LAUNCH, {"config": config}).json()
    assert answer["data"]["launchRun"]["__typename"] == "UnauthorizedError", answer
    assert _post(ui, RUNS).json()["data"]["runsOrError"]["results"] == []
    assert not outside.exists()


# ---------------------------------------------------------------------------------------------------------------
# The run config's paths: refused outside the data root (resources set up before any asset runs)


def _ecb_run(data: Path, monkeypatch: pytest.MonkeyPatch, **vramlab_config: str) -> dg.ExecuteInProcessResult:
    monkeypatch.setenv("VRAMLAB_DATA_DIR", str(data))
    monkeypatch.delenv("VRAMLAB_DB", raising=False)
    from pipeline.assets.raw import ECB_ASSET
    from pipeline.resources import default_resources

    config = {"data_dir": str(data), "db_path": str(data / "vramlab.duckdb"), **vramlab_config}
    return dg.materialize([ECB_ASSET], resources=default_resources(), raise_on_error=False,
                          run_config={"resources": {"vramlab": {"config": config}}})


def _failure_text(result: dg.ExecuteInProcessResult) -> str:
    texts = []
    for event in result.all_events:
        error = getattr(event.event_specific_data, "error", None)
        while error is not None:
            texts.append(error.message)
            error = error.cause
    return "\n".join(texts)


@pytest.mark.parametrize("how", ["elsewhere", "dotdot", "symlink"])
def test_run_config_data_dir_outside_the_root_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         how: str) -> None:
    """W06 a run whose config sets ``data_dir`` outside ``VRAMLAB_DATA_DIR`` (a folder elsewhere, ``..`` out
    of it, or a symlink inside it to a folder outside) fails before any asset runs, with one message naming the
    key, the path and the root; nothing is written there. Before the fix the run wrote its files there."""
    data, outside = tmp_path / "data", tmp_path / "attacker"
    data.mkdir()
    outside.mkdir()
    given = {"elsewhere": outside, "dotdot": data / ".." / "attacker", "symlink": data / "innocent"}[how]
    if how == "symlink":
        given.symlink_to(outside, target_is_directory=True)
    result = _ecb_run(data, monkeypatch, data_dir=str(given))
    assert not result.success
    text = _failure_text(result)
    assert f"run config resources.vramlab.config.data_dir = {given}" in text, text[-2000:]
    assert f"is outside the data root {data.resolve()}" in text
    assert list(outside.iterdir()) == []


def test_run_config_db_path_outside_the_root_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """W06 the same for the DuckDB file (``db_path``; the DuckDB resource's ``database`` is checked alike)."""
    data = tmp_path / "data"
    result = _ecb_run(data, monkeypatch, db_path=str(tmp_path / "elsewhere.duckdb"))
    assert not result.success
    assert "resources.vramlab.config.db_path" in _failure_text(result)
    assert not (tmp_path / "elsewhere.duckdb").exists()


def test_run_config_inside_the_root_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check refuses only what leaves the root: a sub-folder of the data directory is a data directory."""
    data = tmp_path / "data"
    result = _ecb_run(data, monkeypatch, data_dir=str(data / "sub"))
    assert result.success, _failure_text(result)[-2000:]
    assert (data / "sub" / "raw" / "fetch_log.jsonl").exists()


def test_guard_reads_allowed_names() -> None:
    """The names the guard answers: loopback, the bound address unless a wildcard, configured ones."""
    from pipeline.ops.webui import allowed_hosts, host_name

    assert host_name("[::1]:3000") == "::1" and host_name("LocalHost.:3000") == "localhost"
    assert allowed_hosts(bound="0.0.0.0") == {"localhost", "127.0.0.1", "::1"} | (
        {host_name(n) for n in os.environ.get("VRAMLAB_UI_ALLOWED_HOSTS", "").split(",") if n.strip()})
    assert "10.0.0.5" in allowed_hosts(bound="10.0.0.5") and "ui.lan" in allowed_hosts(["ui.lan"], bound="")
