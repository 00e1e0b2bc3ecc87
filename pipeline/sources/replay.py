"""Offline replay: recorded payloads served through an httpx transport, so the same ``fetch`` code runs without
a network. ``pipeline/replay/prices/manifest.json`` maps request (method + URL) to a recorded body; secrets in
query strings are ignored when matching. An unrecorded request gets a 404 that says so. Recorded answers carry
``x-vramlab-observed-at``: the snapshot's time, which becomes the observation time of what they contain.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx

from pipeline.settings import REPLAY_SNAPSHOT_AT

REPLAY_ROOT = Path(__file__).resolve().parent.parent / "replay"
_SECRETS = {"key", "api_key", "token", "access_token"}
Override = httpx.Response | Exception


def normalise_url(url: str) -> str:
    parts = urlsplit(url)
    query = sorted((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k.lower() not in _SECRETS)
    return parts._replace(query=urlencode(query), fragment="").geturl()


class ReplayTransport(httpx.BaseTransport):
    def __init__(self, manifest: Path = REPLAY_ROOT / "prices" / "manifest.json",
                 overrides: dict[str, Override | list[Override]] | None = None):
        """``overrides`` replace recorded answers for given URLs (fault tests): a response, an exception to
        raise, or a list of those consumed one per request."""
        self.root = manifest.parent
        entries = json.loads(manifest.read_text())["responses"]
        self.manifest = entries
        self.entries = {(e.get("method", "GET"), normalise_url(e["url"])): e for e in entries}
        self.overrides = {normalise_url(k): v for k, v in (overrides or {}).items()}
        self.requests: list[str] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = normalise_url(str(request.url))
        self.requests.append(url)
        if url in self.overrides:
            answer = self.overrides[url]
            if isinstance(answer, list):
                answer = answer.pop(0) if len(answer) > 1 else answer[0]
            if isinstance(answer, Exception):
                raise answer
            return answer
        entry = self.entries.get((request.method, url))
        if entry is None:
            return httpx.Response(404, json={"error": "no recorded response", "url": url}, request=request)
        body = (self.root / entry["file"]).read_bytes()
        headers = {"content-type": entry.get("content_type", "application/json"), **entry.get("headers", {}),
                   "x-vramlab-observed-at": REPLAY_SNAPSHOT_AT.isoformat()}
        ranged = _byte_range(request.headers.get("range"))
        if ranged is not None and entry.get("status", 200) == 200:
            # Range requests (safetensors headers, #11): served from the recording, which may hold only a prefix
            # of the real file (the header bytes); a range past the recording gets what the recording has.
            start, end = ranged
            part = body[start:end + 1]
            headers["content-range"] = f"bytes {start}-{start + len(part) - 1}/*"
            return httpx.Response(206, headers=headers, content=part, request=request)
        return httpx.Response(entry.get("status", 200), headers=headers, content=body, request=request)


def _byte_range(value: str | None) -> tuple[int, int] | None:
    """``bytes=a-b`` (the only form we send) as (a, b); anything else is ignored (whole body, as a server may)."""
    if not value or not value.startswith("bytes="):
        return None
    first, _, last = value[6:].partition("-")
    if not first.isdigit() or not last.isdigit() or int(last) < int(first):
        return None
    return int(first), int(last)
