"""The Dagster UI as ``vramlab serve`` starts it: ``dagster-webserver`` with a guard in front of its app.

``python -m pipeline.ops.webui [dagster-webserver options]`` runs Dagster's own webserver command with the same
options; the one difference is that the app it serves is wrapped by :class:`UIGuard` (in process: no proxy to
run, and websockets pass through untouched). The guard stops what a web page the user merely visits could do
to a server on loopback:

- **DNS rebinding**: a page on ``evil.example`` whose name is re-pointed at 127.0.0.1 reaches the UI with
  ``Host: evil.example``. Requests whose ``Host`` is not a name of this machine (``localhost``, ``127.0.0.1``,
  ``[::1]``, the address the UI is bound to) or a configured one (``VRAMLAB_UI_ALLOWED_HOSTS``, comma-separated:
  the public name an authenticating reverse proxy forwards) are refused.
- **Cross-site requests**: a request carrying an ``Origin`` (browsers send one on every cross-origin POST and on
  every websocket) whose host is not allowed as above is refused, so a form or ``fetch`` from another site never
  runs a mutation, and a websocket from another site never subscribes.
- **Mutations sent as GET** (a plain link or ``<img>``): GraphQL over GET runs queries only; POSTs to the
  GraphQL endpoint must be ``application/json`` or ``application/graphql`` (types a cross-site page cannot send
  without a CORS preflight, which the UI never grants).

Read-only mode (``--read-only``, the default under ``vramlab serve``) is Dagster's own: launching runs,
backfills and turning schedules on or off are refused even to a request that passes the guard.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable, Iterable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pipeline.settings import variable

ENV_ALLOWED = "VRAMLAB_UI_ALLOWED_HOSTS"
#: the bound address is read from this variable (set by ``vramlab serve``) so a specific address is allowed too
ENV_BOUND = "VRAMLAB_UI_BIND_HOST"
LOCAL_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARDS = frozenset({"0.0.0.0", "::", ""})
GRAPHQL_BODY_TYPES = frozenset({"application/json", "application/graphql"})

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def host_name(value: str) -> str:
    """The host part of a ``Host`` header or URL authority, lower-case, without port, brackets or final dot."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    if value.count(":") == 1:
        value = value.split(":", 1)[0]
    return value.rstrip(".")


def allowed_hosts(extra: Iterable[str] = (), bound: str | None = None) -> frozenset[str]:
    """Loopback names, the bound address (unless a wildcard), ``VRAMLAB_UI_ALLOWED_HOSTS`` and ``extra``."""
    names = set(LOCAL_NAMES)
    bound = variable(ENV_BOUND).text() if bound is None else bound
    if host_name(bound) not in WILDCARDS:
        names.add(host_name(bound))
    names.update(host_name(n) for n in variable(ENV_ALLOWED).text().split(",") if n.strip())
    names.update(host_name(n) for n in extra if n.strip())
    return frozenset(names)


def _operations(query: str) -> set[str] | None:
    """The operation kinds (``query``, ``mutation``, ``subscription``) of a GraphQL document; None if unparseable."""
    from graphql import OperationDefinitionNode, parse
    from graphql.error import GraphQLError

    try:
        document = parse(query)
    except GraphQLError:
        return None
    return {d.operation.value for d in document.definitions if isinstance(d, OperationDefinitionNode)}


class UIGuard:
    """ASGI middleware: refuses foreign ``Host`` and ``Origin`` headers, GraphQL mutations over GET, and GraphQL
    POSTs of a type a cross-site page can send (see the module docstring). Everything else reaches ``app``."""

    def __init__(self, app: ASGIApp, hosts: frozenset[str] | None = None):
        self.app = app
        self.hosts = allowed_hosts() if hosts is None else hosts

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        """(status, reason) when the request is refused, else None."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        host = host_name(headers.get("host", ""))
        if host not in self.hosts:
            return 421, (f"Host {headers.get('host', '')!r} is not a name of this server (DNS rebinding guard); "
                         f"allowed: {', '.join(sorted(self.hosts))}. Add a name with --allow-host or "
                         f"{ENV_ALLOWED}")
        origin = headers.get("origin")
        if origin is not None and host_name(urlsplit(origin).netloc) not in self.hosts:
            return 403, f"cross-site request refused (Origin {origin!r})"
        path = scope.get("path", "")
        if scope["type"] != "http" or not path.rstrip("/").endswith("/graphql"):
            return None
        method = scope.get("method", "GET").upper()
        if method in ("GET", "HEAD"):
            params = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            for query in params.get("query", []):
                kinds = _operations(query)
                if kinds is None or kinds - {"query"}:
                    return 405, "GraphQL over GET runs queries only: send mutations as a POST of application/json"
        elif method == "POST":
            kind = headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if kind not in GRAPHQL_BODY_TYPES:
                return 415, f"GraphQL POST must be application/json (got {kind or 'no content type'!r})"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)  # lifespan
            return
        refused = self.refusal(scope)
        if refused is None:
            await self.app(scope, receive, send)
            return
        status, reason = refused
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": reason[:120]})
            return
        body = json.dumps({"error": reason}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


def main() -> None:
    """Dagster's webserver command, serving its app behind :class:`UIGuard`."""
    import dagster_webserver.cli as cli

    create = getattr(cli, "create_app_from_workspace_process_context", None)
    if create is None:  # a Dagster upgrade moved it: refuse to serve unguarded
        sys.exit("vramlab: this dagster-webserver has no create_app_from_workspace_process_context; the UI guard "
                 "cannot be installed, so the UI is not started")

    def guarded(*args: Any, **kwargs: Any) -> UIGuard:  # noqa: ANN401
        return UIGuard(create(*args, **kwargs))

    cli.create_app_from_workspace_process_context = guarded
    sys.argv[0] = "dagster-webserver"
    cli.main()


if __name__ == "__main__":
    main()
