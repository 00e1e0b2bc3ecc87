"""How vramlab behaves on the network: one place for timeouts, retries, rate limits, size caps and validators.

- Retries with exponential backoff and jitter on timeouts, connection errors, 429 and 5xx; a ``Retry-After``
  header (seconds or HTTP date) is honoured, capped at ``max_retry_wait``.
- At most one request per ``min_interval`` seconds to the same host.
- Responses larger than ``max_bytes`` are refused while streaming (a 5 GB "config.json" never lands in memory).
- A descriptive User-Agent (some providers reject library defaults).
- Conditional requests: ETag / Last-Modified seen last time are sent back; a 304 means "unchanged".
The sleep and clock functions are injectable so tests run instantly.
"""

from __future__ import annotations

import email.utils
import random
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from urllib.parse import urlsplit

import httpx

from pipeline.sources.base import RawPart

USER_AGENT = "vramlab/0.1 (+https://github.com/vramlab/vramlab; GPU price and LLM sizing pipeline)"
RETRY_STATUSES = {429, 500, 502, 503, 504}
KEPT_HEADERS = ("content-type", "etag", "last-modified", "retry-after", "content-length", "x-vramlab-observed-at")


class ResponseTooLarge(Exception):
    def __init__(self, url: str, limit: int):
        super().__init__(f"{url}: response larger than {limit:,} bytes, refused")


class HttpStatusError(Exception):
    def __init__(self, part: RawPart):
        self.part = part
        super().__init__(f"{part.url}: HTTP {part.status}")


class HostGate:
    """Per-host spacing of request starts (``min_interval``), shared by every transport and thread given the same
    gate: sources fetched concurrently still send at most one request per interval to a host they share (the
    SkyPilot catalogs all live on raw.githubusercontent.com). Each start is reserved under a lock; the wait
    happens outside it, so other hosts are never held up."""

    def __init__(self) -> None:
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()

    def reserve(self, host: str, now: float, min_interval: float) -> float:
        """Seconds to wait before starting a request to ``host`` at ``now``."""
        with self._lock:
            last = self._last.get(host)
            wait = 0.0 if last is None else max(0.0, min_interval - (now - last))
            self._last[host] = now + wait
            return wait


class RetryingTransport(httpx.BaseTransport):
    """Wraps another transport with retries, backoff, Retry-After and a per-host rate limit."""

    def __init__(self, inner: httpx.BaseTransport, *, retries: int = 3, backoff: float = 1.0,
                 max_retry_wait: float = 60.0, min_interval: float = 0.5,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
                 jitter: Callable[[], float] = random.random, gate: HostGate | None = None):
        self.inner, self.retries, self.backoff, self.max_retry_wait = inner, retries, backoff, max_retry_wait
        self.min_interval, self.sleep, self.clock, self.jitter = min_interval, sleep, clock, jitter
        self.gate = gate or HostGate()
        self.waits: list[float] = []  # every pause taken, for the fetch log and tests

    def _pause(self, seconds: float) -> None:
        if seconds > 0:
            self.waits.append(seconds)
            self.sleep(seconds)

    def _rate_limit(self, host: str) -> None:
        self._pause(self.gate.reserve(host, self.clock(), self.min_interval))

    def _retry_after(self, response: httpx.Response) -> float | None:
        value = response.headers.get("retry-after")
        if not value:
            return None
        if value.strip().isdigit():
            return float(value)
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, (when - datetime.now(UTC)).total_seconds())

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        host = request.url.host
        for attempt in range(self.retries + 1):
            self._rate_limit(host)
            try:
                response = self.inner.handle_request(request)
            except (httpx.TimeoutException, httpx.ConnectError, httpx.RemoteProtocolError):
                if attempt == self.retries:
                    raise
                self._pause(self.backoff * 2**attempt + self.jitter())
                continue
            if response.status_code not in RETRY_STATUSES or attempt == self.retries:
                return response
            wait = self._retry_after(response)
            response.close()
            self._pause(min(self.max_retry_wait, wait if wait is not None else self.backoff * 2**attempt + self.jitter()))
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        self.inner.close()


class SourceClient(httpx.Client):
    """An httpx client that also carries the response size cap and the conditional-request validators."""

    def __init__(self, *, transport: httpx.BaseTransport, max_bytes: int, validators: dict[str, dict[str, str]] | None,
                 timeout: float):
        super().__init__(transport=transport, timeout=httpx.Timeout(timeout, connect=10.0),
                         headers={"User-Agent": USER_AGENT, "Accept-Encoding": "gzip"}, follow_redirects=True)
        self.max_bytes = max_bytes
        self.validators: dict[str, dict[str, str]] = dict(validators or {})


def make_client(transport: httpx.BaseTransport | None = None, *, max_bytes: int = 64 * 2**20,
                validators: dict[str, dict[str, str]] | None = None, timeout: float = 30.0,
                sleep: Callable[[float], None] = time.sleep, retries: int = 3, min_interval: float = 0.5,
                gate: HostGate | None = None) -> SourceClient:
    inner = transport or httpx.HTTPTransport()
    return SourceClient(transport=RetryingTransport(inner, sleep=sleep, retries=retries, min_interval=min_interval,
                                                    gate=gate),
                        max_bytes=max_bytes, validators=validators, timeout=timeout)


def get_part(client: httpx.Client, url: str, *, method: str = "GET", conditional: bool = False,
             allow_statuses: tuple[int, ...] = (), max_bytes: int | None = None,
             **kwargs) -> RawPart:  # type: ignore[no-untyped-def]
    """One request, streamed under the size cap (the client's, or a tighter ``max_bytes`` for this request).
    Raises HttpStatusError for non-2xx (except 304 when ``conditional``), ResponseTooLarge, or httpx's
    timeout/transport errors."""
    limit = min(max_bytes or 2**62, getattr(client, "max_bytes", 64 * 2**20))
    headers = dict(kwargs.pop("headers", {}) or {})
    validators = getattr(client, "validators", {})
    if conditional and url in validators:
        seen = validators[url]
        if seen.get("etag"):
            headers["If-None-Match"] = seen["etag"]
        if seen.get("last-modified"):
            headers["If-Modified-Since"] = seen["last-modified"]
    with client.stream(method, url, headers=headers, **kwargs) as response:
        declared = response.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > limit:
            raise ResponseTooLarge(url, limit)
        chunks, size = [], 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > limit:
                raise ResponseTooLarge(url, limit)
            chunks.append(chunk)
        kept = {k: response.headers[k] for k in KEPT_HEADERS if k in response.headers}
        part = RawPart(url=_redacted(str(response.request.url)), status=response.status_code, body=b"".join(chunks),
                       headers=kept)
    if conditional and response.status_code == 200 and isinstance(validators, dict):
        validators[url] = {k: kept[k] for k in ("etag", "last-modified") if k in kept}
    if response.status_code == 304 and conditional:
        return part
    if not 200 <= response.status_code < 300 and response.status_code not in allow_statuses:
        raise HttpStatusError(part)
    return part


_SECRET_PARAMS = ("api_key", "key", "token", "access_token")


def _redacted(url: str) -> str:
    """The URL with secret query parameters masked: payload metadata and logs never carry keys."""
    parts = urlsplit(url)
    if not parts.query:
        return url
    query = "&".join(
        f"{k}=REDACTED" if k.lower() in _SECRET_PARAMS else f"{k}={v}" if v else k
        for k, _, v in (p.partition("=") for p in parts.query.split("&"))
    )
    return parts._replace(query=query).geturl()
