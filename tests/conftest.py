"""Shared test helpers. Every test runs offline: any attempt to reach a non-loopback address fails the test."""

from __future__ import annotations

import socket

import pytest

_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address, *args, **kwargs):  # type: ignore[no-untyped-def]
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, str) and (host in ("localhost", "::1") or host.startswith("127.") or host.startswith("/")):
        return _real_connect(self, address, *args, **kwargs)
    raise RuntimeError(f"test tried to reach the network: {address!r}")


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket.socket, "connect", _loopback_only)
