"""Offline replay: recorded payloads served through an httpx transport, so the same ``fetch`` code runs without
a network. ``pipeline/replay/prices/manifest.json`` maps request (method + URL) to a recorded body; secrets in
query strings are ignored when matching. An unrecorded request gets a 404 that says so.

Recorded answers carry ``x-vramlab-observed-at``: the recording's own capture time (``captured_at`` of its manifest
entry, with ``captured_at_basis`` saying where that date comes from; the reference freeze time where an entry has
none). It becomes the observation and verification time of what the payload contains, so a bundled recording
keeps the date it was seen and never becomes fresh by being replayed again.

``series.json`` beside the manifest orders earlier recordings of the same URLs into a replay series
(:func:`load_series`): replaying its steps one after another builds a price history through the same assets.
A transport made for one step serves that step's recordings and the current ones for every other URL.

A request with ``Range: bytes=a-b`` (safetensors headers) gets 206 and that slice of the recording.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx

from pipeline.settings import REPLAY_SNAPSHOT_AT

REPLAY_ROOT = Path(__file__).resolve().parent.parent / "replay"
PRICES_MANIFEST = REPLAY_ROOT / "prices" / "manifest.json"
CURRENT_STEP = "current"
_SECRETS = {"key", "api_key", "token", "access_token"}
Override = httpx.Response | Exception


def normalise_url(url: str) -> str:
    parts = urlsplit(url)
    query = sorted((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k.lower() not in _SECRETS)
    return parts._replace(query=urlencode(query), fragment="").geturl()


@dataclass(frozen=True)
class ReplayStep:
    """One step of a replay series: its recordings (manifest entries) and the time it is judged as of."""

    id: str
    as_of: datetime
    entries: tuple[dict, ...]

    @property
    def sources(self) -> list[str]:
        return sorted({e["source"] for e in self.entries})


class SeriesError(ValueError):
    """A replay series that cannot be used (unknown step, unordered times, missing file)."""


def load_series(manifest: Path = PRICES_MANIFEST) -> list[ReplayStep]:
    """The ordered replay series of ``series.json`` beside ``manifest`` (the current recordings alone if there is
    none). Steps must be in time order; their files must exist."""
    root = manifest.parent
    current = tuple(json.loads(manifest.read_text())["responses"])
    path = root / "series.json"
    if not path.exists():
        return [ReplayStep(CURRENT_STEP, REPLAY_SNAPSHOT_AT, current)]
    steps = []
    for raw in json.loads(path.read_text())["steps"]:
        entries = current if raw["responses"] == manifest.name else tuple(raw["responses"])
        for e in entries:
            if not (root / e["file"]).is_file():
                raise SeriesError(f"replay step {raw['id']}: {e['file']} is missing")
        steps.append(ReplayStep(raw["id"], datetime.fromisoformat(raw["as_of"]), entries))
    times = [s.as_of for s in steps]
    if times != sorted(times) or len({s.id for s in steps}) != len(steps):
        raise SeriesError(f"{path}: steps must have distinct ids and be in time order")
    return steps


def series_step(step_id: str, manifest: Path = PRICES_MANIFEST) -> ReplayStep:
    for step in load_series(manifest):
        if step.id == step_id:
            return step
    known = ", ".join(s.id for s in load_series(manifest))
    raise SeriesError(f"no replay step {step_id!r} (known: {known})")


def captured_at(entry: dict) -> str:
    return entry.get("captured_at") or REPLAY_SNAPSHOT_AT.isoformat()


class ReplayTransport(httpx.BaseTransport):
    def __init__(self, manifest: Path = PRICES_MANIFEST,
                 overrides: dict[str, Override | list[Override]] | None = None, step: str | None = None):
        """``overrides`` replace recorded answers for given URLs (fault tests): a response, an exception to
        raise, or a list of those consumed one per request. ``step`` (a ``series.json`` step id) serves that
        step's recordings in place of the current ones for the URLs it records."""
        self.root = manifest.parent
        entries = json.loads(manifest.read_text())["responses"]
        self.manifest = entries
        self.entries = {(e.get("method", "GET"), normalise_url(e["url"])): e for e in entries}
        if step and step != CURRENT_STEP:
            self.entries |= {(e.get("method", "GET"), normalise_url(e["url"])): e
                             for e in series_step(step, manifest).entries}
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
                   "x-vramlab-observed-at": captured_at(entry)}
        ranged = _byte_range(request.headers.get("range"))
        if ranged is not None and entry.get("status", 200) == 200:
            # Range requests (safetensors headers): served from the recording, which may hold only a prefix
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
