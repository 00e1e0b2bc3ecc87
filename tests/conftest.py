"""Every test runs offline: any attempt to resolve or reach a non-loopback address fails the test.

Tests come in two tiers. A module that runs the asset graph, a subprocess or a service (what :data:`HEAVY` finds
in its source) is marked ``heavy``; ``python3 tasks.py test --fast`` runs the others, the README's test command
runs everything."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

_real_connect = socket.socket.connect
_real_getaddrinfo = socket.getaddrinfo
_LOOPBACK = ("localhost", "::1", "0.0.0.0")


def _is_loopback(host: object) -> bool:
    return isinstance(host, str) and (host in _LOOPBACK or host.startswith("127.") or host.startswith("/"))


def _loopback_only(self: socket.socket, address, *args, **kwargs):  # type: ignore[no-untyped-def]
    host = address[0] if isinstance(address, tuple) else address
    if _is_loopback(host):
        return _real_connect(self, address, *args, **kwargs)
    raise RuntimeError(f"test tried to reach the network: {address!r}")


def _resolve_loopback_only(host, *args, **kwargs):  # type: ignore[no-untyped-def]
    if host is None or _is_loopback(host if isinstance(host, str) else str(host)):
        return _real_getaddrinfo(host, *args, **kwargs)
    raise RuntimeError(f"test tried to reach the network: resolving {host!r}")


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _loopback_only)
    monkeypatch.setattr(socket, "getaddrinfo", _resolve_loopback_only)


@pytest.fixture(scope="session")
def published(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The whole asset graph materialized once on replay into a temp data directory (shared by the tests that
    read its DuckDB file and its published snapshot)."""
    import dagster as dg
    from dagster_duckdb import DuckDBResource

    from pipeline.definitions import ALL_ASSETS
    from pipeline.resources import VramlabSettings

    tmp = tmp_path_factory.mktemp("published")
    db = tmp / "vramlab.duckdb"
    resources = {"vramlab": VramlabSettings(data_dir=str(tmp), db_path=str(db)),
                 "duckdb": DuckDBResource(database=str(db))}
    result = dg.materialize(ALL_ASSETS, resources=resources)
    # the snapshot this run published, named before any later test publishes another on the same data dir
    snapshot = (tmp / "exports" / "latest").resolve()
    return {"tmp": tmp, "db": db, "result": result, "resources": resources, "snapshot": snapshot}


def _basetemp(session: pytest.Session) -> str | None:
    factory = getattr(session.config, "_tmp_path_factory", None)
    return str(factory.getbasetemp()) if factory is not None else None


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In a pytest-xdist worker, after its session fixtures are torn down: what its tests left behind (its own
    descendants, processes naming its temporary folder) goes to the controller with the worker's output, so a child a
    test left is named even when the worker itself is gone by the time the controller looks."""
    import os

    from processes import wait_until_none_left

    if hasattr(session.config, "workerinput"):
        session.config.workeroutput["left_behind"] = wait_until_none_left(os.getpid(), _basetemp(session))


_WORKERS_LEFT: list[str] = []


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:  # type: ignore[no-untyped-def]  # pytest-xdist's: a worker ended
    _WORKERS_LEFT.extend(getattr(node, "workeroutput", {}).get("left_behind", []))


@pytest.hookimpl(wrapper=True, specname="pytest_sessionfinish")
def pytest_sessionfinish_no_process_left(session: pytest.Session, exitstatus: int):  # type: ignore[no-untyped-def]
    """A test run leaves no process behind: a child still alive at the end (a run's worker, a webserver, a
    redis-server) fails the session, named. Checked after every other finishing step (session fixtures torn down,
    pytest-xdist's workers shut down), with what the workers reported."""
    import os
    import sys

    from processes import wait_until_none_left

    result = yield
    if hasattr(session.config, "workerinput"):
        return result
    left = _WORKERS_LEFT + wait_until_none_left(os.getpid(), _basetemp(session))
    if left:
        print("\nprocesses left behind by the test run:\n  " + "\n  ".join(left), file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    return result


#: what makes a test module heavy: it runs the graph (in process or as a command), a subprocess or a service
HEAVY = ("subprocess.", "materialize(", "execute_in_process", "execute_job", "published: dict", "full_run",
         "vramlab(", "LocalCluster", "chromium", "run_main_job", "backfill_history", "rebuild_database(")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "heavy: runs the asset graph, a subprocess or a service (left out by --fast)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    heavy: dict[Path, bool] = {}
    for item in items:
        path = Path(item.fspath)
        if path not in heavy:
            source = path.read_text(errors="replace")
            heavy[path] = any(mark in source for mark in HEAVY)
        if heavy[path]:
            item.add_marker(pytest.mark.heavy)
