"""How vramlab behaves on the network: one place for timeouts, retries, rate limits, size caps and validators.

- Retries with exponential backoff and jitter on timeouts, connection errors, 429 and 5xx; a ``Retry-After``
  header (seconds or HTTP date) is honoured up to ``max_retry_wait``; a longer one skips that host for the rest of
  the run (:class:`HostGate`: later requests to it fail at once, other hosts go on).
- At most one request per ``min_interval`` seconds to the same host.
- Responses larger than ``max_bytes`` are refused while streaming (a 5 GB "config.json" never lands in memory).
- A descriptive User-Agent (some providers reject library defaults).
- Conditional requests: ETag / Last-Modified seen last time are sent back; a 304 means "unchanged".
- Secrets never leave the process: every URL kept or reported (payload metadata, error messages, the fetch log,
  httpx's own log records) has its key-like query parameters masked (:func:`redact`), and every body received
  has the secret values in it replaced before it is kept or landed (:func:`scrub`).
Timings come from the environment (``VRAMLAB_HTTP_RETRIES``, ``VRAMLAB_HTTP_BACKOFF``, ``VRAMLAB_HTTP_TIMEOUT``,
``VRAMLAB_HTTP_MAX_RETRY_WAIT``), so a test or an impatient operator shortens them without touching code; the
sleep and clock functions are injectable too.
"""

from __future__ import annotations

import email.utils
import json
import logging
import os
import random
import re
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from urllib.parse import quote, quote_plus

import httpx

from pipeline.settings import variable
from pipeline.sources.payload import RawPart

USER_AGENT = "vramlab/0.1 (+https://github.com/vramlab/vramlab; GPU price and LLM sizing pipeline)"
RETRY_STATUSES = {429, 500, 502, 503, 504}
KEPT_HEADERS = ("content-type", "etag", "last-modified", "retry-after", "content-length", "date",
                "x-vramlab-observed-at")


def http_settings() -> dict[str, float]:
    """Retry and timeout settings, from the environment (defaults: 3 retries, 1 s backoff, 30 s timeout per read,
    a total deadline of 300 s per request and 900 s per source fetch, retries and their waits included)."""
    return {"retries": variable("VRAMLAB_HTTP_RETRIES").whole(), "backoff": variable("VRAMLAB_HTTP_BACKOFF").number(),
            "timeout": variable("VRAMLAB_HTTP_TIMEOUT").number(),
            "max_retry_wait": variable("VRAMLAB_HTTP_MAX_RETRY_WAIT").number(),
            "request_deadline": variable("VRAMLAB_HTTP_DEADLINE").number(),
            "source_deadline": variable("VRAMLAB_SOURCE_DEADLINE").number()}


#: an error body (4xx/5xx) is kept up to this many bytes: enough for any provider's error message, never a bomb
ERROR_BODY_MAX = 256 * 2**10
#: a body that decompresses beyond this ratio to its compressed bytes, once past BOMB_MIN_BYTES, is refused
#: as a decompression bomb (real JSON and CSV answers compress 5-30x)
BOMB_RATIO = 200
BOMB_MIN_BYTES = 8 * 2**20


class DeadlineExceeded(httpx.TimeoutException):
    """No complete answer within the total deadline (an endless or trickling stream, retries that go on)."""

    def __init__(self, url: str):
        super().__init__(f"{redact(url)}: no complete answer within the total deadline "
                         "(VRAMLAB_HTTP_DEADLINE per request, VRAMLAB_SOURCE_DEADLINE per source)")


def deadline_for(client: httpx.Client, request_seconds: float | None = None) -> float:
    """Monotonic time by which this request must be done: its own deadline, or the source's if that is sooner."""
    seconds = http_settings()["request_deadline"] if request_seconds is None else request_seconds
    own = time.monotonic() + seconds
    source = getattr(client, "deadline_at", None)
    return min(own, source) if source is not None else own


def check_deadline(url: str, deadline: float) -> None:
    if time.monotonic() > deadline:
        raise DeadlineExceeded(url)


def capped_bytes(response: httpx.Response, url: str, limit: int, deadline: float, *,
                 truncate: bool = False) -> bytes:
    """The body as decompressed bytes, refused past ``limit`` (or cut there with ``truncate``, for error
    bodies), past the deadline, or when it decompresses like a bomb. Counting happens per decoded chunk."""
    chunks, size = [], 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > limit:
            if truncate:
                chunks.append(chunk[: len(chunk) - (size - limit)])
                break
            raise ResponseTooLarge(url, limit)
        if size > BOMB_MIN_BYTES and size > BOMB_RATIO * max(1, response.num_bytes_downloaded):
            raise ResponseTooLarge(url, limit, f"decompresses {size / max(1, response.num_bytes_downloaded):,.0f}x "
                                               "(a compression bomb)")
        check_deadline(url, deadline)
        chunks.append(chunk)
    return b"".join(chunks)


def capped_lines(response: httpx.Response, url: str, deadline: float, *, max_line: int = 2**20,
                 max_total: int = 16 * 2**30):
    """Decoded text lines of a streamed body, each at most ``max_line`` bytes, at most ``max_total`` decompressed
    bytes in all, within the deadline (for sources that keep only some lines of a huge file: AWS)."""
    pending, total = b"", 0
    for chunk in response.iter_bytes():
        total += len(chunk)
        if total > max_total:
            raise ResponseTooLarge(url, max_total)
        if total > BOMB_MIN_BYTES and total > BOMB_RATIO * max(1, response.num_bytes_downloaded):
            raise ResponseTooLarge(url, max_total, "decompresses like a compression bomb")
        check_deadline(url, deadline)
        pending += chunk
        *lines, pending = pending.split(b"\n")
        if len(pending) > max_line:
            raise ResponseTooLarge(url, max_line, "one line is longer than that")
        for line in lines:
            yield line.rstrip(b"\r").decode("utf-8", errors="replace")
    if pending:
        yield pending.rstrip(b"\r").decode("utf-8", errors="replace")


class ResponseTooLarge(Exception):
    def __init__(self, url: str, limit: int, why: str | None = None):
        super().__init__(f"{redact(url)}: {why + ', refused' if why else f'response larger than {limit:,} bytes, refused'}")


class HttpStatusError(Exception):
    def __init__(self, part: RawPart):
        self.part = part
        super().__init__(f"{part.url}: HTTP {part.status}")


class HostSkipped(httpx.TransportError):
    """A request not sent: its host asked to be retried later than a request may wait (see :class:`HostGate`)."""

    def __init__(self, host: str, seconds: float, request: httpx.Request | None = None):
        self.host, self.seconds = host, seconds
        super().__init__(f"{host} asked to retry after {seconds:.0f} s; skipped for this run", request=request)


class HostGate:
    """Per-host spacing of request starts (``min_interval``), shared by every transport and thread given the same
    gate: sources fetched concurrently still send at most one request per interval to a host they share (the
    SkyPilot catalogs all live on raw.githubusercontent.com). Each start is reserved under a lock; the wait
    happens outside it, so other hosts are never held up.

    The gate is also each host's breaker: a host that answers ``Retry-After`` longer than a request may wait
    (``max_retry_wait``) has said it will not answer within this run, so it is marked skipped (:meth:`skip`) and
    every later request to it through the same gate fails at once (:class:`HostSkipped`) instead of costing its
    own retries and capped waits: one long Retry-After costs one request, not models x retries. The gate lives
    as long as the clients that share it (a run's step), so the next run asks the host again."""

    def __init__(self) -> None:
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()
        self.skipped: dict[str, float] = {}  # host -> the Retry-After it sent, seconds

    def skip(self, host: str, seconds: float) -> None:
        with self._lock:
            self.skipped[host] = max(seconds, self.skipped.get(host, 0.0))

    def skipped_for(self, host: str) -> float | None:
        with self._lock:
            return self.skipped.get(host)

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

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with jitter proportional to it (a 10 ms test backoff stays in milliseconds)."""
        return self.backoff * (2**attempt + self.jitter())

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
        deadline = request.extensions.get("vramlab_deadline")
        for attempt in range(self.retries + 1):
            if deadline is not None and attempt and self.clock() > deadline:
                raise DeadlineExceeded(str(request.url))  # no retry starts past the deadline
            skipped = self.gate.skipped_for(host)
            if skipped is not None:
                raise HostSkipped(host, skipped, request)
            self._rate_limit(host)
            try:
                response = self.inner.handle_request(request)
            except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError):
                # NetworkError covers connect failures and a connection reset mid-read (ReadError): transient
                if attempt == self.retries:
                    raise
                self._pause(self._backoff(attempt))
                continue
            if response.status_code not in RETRY_STATUSES:
                return response
            wait = self._retry_after(response)
            if wait is not None and wait > self.max_retry_wait:
                # the host will not answer within any wait a request may take: skip it for the rest of the run
                # (the breaker), and this answer is the final one (its body kept for the fetch log)
                self.gate.skip(host, wait)
                return response
            if attempt == self.retries:
                return response
            response.close()
            pause = min(self.max_retry_wait, wait if wait is not None else self._backoff(attempt))
            if deadline is not None and self.clock() + pause > deadline:
                return _reopened(response)  # waiting would pass the deadline: this answer is the last one
            self._pause(pause)
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        self.inner.close()


def skipped_hosts(client: httpx.Client) -> dict[str, float]:
    """Hosts the client's breaker skipped for the run, with the Retry-After each asked for (seconds)."""
    gate = getattr(getattr(client, "_transport", None), "gate", None)
    return dict(gate.skipped) if isinstance(gate, HostGate) else {}


def _reopened(response: httpx.Response) -> httpx.Response:
    """A closed retry-status response handed back as the final answer: status and headers, an empty body."""
    return httpx.Response(response.status_code, headers=response.headers, content=b"", request=response.request)


class SourceClient(httpx.Client):
    """An httpx client that also carries the response size cap and the conditional-request validators."""

    def __init__(self, *, transport: httpx.BaseTransport, max_bytes: int, validators: dict[str, dict[str, str]] | None,
                 timeout: float):
        super().__init__(transport=transport, timeout=httpx.Timeout(timeout, connect=10.0),
                         headers={"User-Agent": USER_AGENT, "Accept-Encoding": "gzip"}, follow_redirects=True)
        self.max_bytes = max_bytes
        self.received: list[RawPart] = []  # every response of the current fetch, kept even when the fetch fails
        self.validators: dict[str, dict[str, str]] = dict(validators or {})
        self.deadline_at: float | None = None  # monotonic time the current source fetch must end by (run_source)


def make_client(transport: httpx.BaseTransport | None = None, *, max_bytes: int = 64 * 2**20,
                validators: dict[str, dict[str, str]] | None = None, timeout: float | None = None,
                sleep: Callable[[float], None] = time.sleep, retries: int | None = None, min_interval: float = 0.5,
                backoff: float | None = None, max_retry_wait: float | None = None,
                gate: HostGate | None = None) -> SourceClient:
    """A client for one run; unset timings come from :func:`http_settings` (the environment)."""
    env = http_settings()
    inner = transport or httpx.HTTPTransport()
    retrying = RetryingTransport(inner, sleep=sleep, min_interval=min_interval, gate=gate,
                                 retries=int(env["retries"]) if retries is None else retries,
                                 backoff=env["backoff"] if backoff is None else backoff,
                                 max_retry_wait=env["max_retry_wait"] if max_retry_wait is None else max_retry_wait)
    return SourceClient(transport=retrying, max_bytes=max_bytes, validators=validators,
                        timeout=env["timeout"] if timeout is None else timeout)


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
    deadline = deadline_for(client)
    check_deadline(url, deadline)
    extensions = {**kwargs.pop("extensions", {}), "vramlab_deadline": deadline}
    with client.stream(method, url, headers=headers, extensions=extensions, **kwargs) as response:
        failed = not 200 <= response.status_code < 300 and response.status_code not in allow_statuses \
            and not (response.status_code == 304 and conditional)
        declared = response.headers.get("content-length")
        if not failed and declared and declared.isdigit() and int(declared) > limit:
            raise ResponseTooLarge(url, limit)
        # an error body is kept (truncated) for the fetch log, never read whole: a 5xx may be a bomb
        body = capped_bytes(response, url, ERROR_BODY_MAX if failed else limit, deadline, truncate=failed)
        # scrubbed before anything keeps it (the landing, the fetch log's hash, a parser's error message): an
        # error page or a GraphQL error that echoes the key never carries it further than this function
        body = scrub(body, error=failed)
        kept = {k: redact(response.headers[k]) for k in KEPT_HEADERS if k in response.headers}
        part = RawPart(url=redact(str(response.request.url)), status=response.status_code, body=body, headers=kept)
    received = getattr(client, "received", None)
    if isinstance(received, list):
        received.append(part)  # what a fetch got before it failed is still landed (run_source)
    if conditional and response.status_code == 200 and isinstance(validators, dict):
        validators[url] = {k: kept[k] for k in ("etag", "last-modified") if k in kept}
    if response.status_code == 304 and conditional:
        return part
    if not 200 <= response.status_code < 300 and response.status_code not in allow_statuses:
        raise HttpStatusError(part)
    return part


_SECRET_PARAMS = ("api_key", "apikey", "key", "token", "access_token", "secret", "password", "sig", "signature")
_SECRET_QUERY = re.compile(r"(?i)([?&](?:" + "|".join(_SECRET_PARAMS) + r")=)[^&#\s'\"]+")
#: environment variables whose values are secrets wherever they appear (provider keys, the Hub token)
SECRET_ENV = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "RUNPOD_API_KEY", "VAST_API_KEY", "LAMBDA_API_KEY",
              "DIGITALOCEAN_TOKEN", "GCP_API_KEY", "VULTR_API_KEY", "AKASH_API_KEY", "OCI_API_KEY")


def _secret_values() -> list[str]:
    names = set(SECRET_ENV) | {k for k in os.environ if k.endswith(("_API_KEY", "_TOKEN", "_SECRET"))}
    return sorted({v for k in names if len(v := os.environ.get(k, "")) >= 6}, key=len, reverse=True)


def redact(text: str) -> str:
    """``text`` with secrets masked: key-like query parameters of any URL in it, and the value of every secret
    environment variable wherever it appears (an error message, a traceback line, a header echoed back)."""
    if not text:
        return text
    text = _SECRET_QUERY.sub(r"\1REDACTED", text)
    for value in _secret_values():
        text = text.replace(value, "REDACTED")
    return text


_redacted = redact  # the old private name

_SECRET_QUERY_BYTES = re.compile(_SECRET_QUERY.pattern.encode())


def scrub(body: bytes, *, error: bool = False) -> bytes:
    """``body`` with the value of every secret environment variable replaced by ``REDACTED``, as sent and as a
    server would echo it back (plain, percent-encoded, JSON-escaped). ``error``: the body of a refused request,
    where key-like query parameters of any URL it repeats are masked too (a 404 page quoting ``?key=...``); a
    successful body keeps its URLs, only secret values are replaced in it. Bytes in, bytes out: a body that is not
    text is scrubbed just the same."""
    if not body:
        return body
    for value in _secret_values():
        forms = {value, quote(value, safe=""), quote_plus(value), json.dumps(value)[1:-1]}
        for form in sorted(forms, key=len, reverse=True):
            if form:
                body = body.replace(form.encode(), b"REDACTED")
    if error:
        body = _SECRET_QUERY_BYTES.sub(rb"\1REDACTED", body)
    return body


class _RedactingFilter(logging.Filter):
    """httpx and httpcore log every request URL at INFO/DEBUG; mask keys before any handler sees them."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record is left to logging's own error path
            return True
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


for _name in ("httpx", "httpcore", "httpcore.connection", "httpcore.http11", "httpcore.http2", "httpcore.proxy"):
    if not any(isinstance(f, _RedactingFilter) for f in logging.getLogger(_name).filters):
        logging.getLogger(_name).addFilter(_RedactingFilter())
