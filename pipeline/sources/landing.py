"""Raw landing and the fetch log: every fetch is written as received before it is parsed.

Layout under the data directory::

    raw/<source>/<YYYY-MM-DD>/<HHMMSS.ffffff>Z.json          fetch metadata (url, status, headers, sha256, size)
    raw/<source>/<YYYY-MM-DD>/<HHMMSS.ffffff>Z.<n>.body.gz   part n as received, gzip-compressed
    raw/<source>/validators.json                              ETag / Last-Modified seen last, per URL
    raw/fetch_log.jsonl                                       one line per attempt, whatever its outcome

``run_source`` never raises for a source's own failure: it returns the outcome, so one failing source never
stops the others. The same mechanism lands Hub payloads (``pipeline/sources/huggingface.py``).
"""

from __future__ import annotations

import gzip
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import httpx
from pydantic import BaseModel, Field

from pipeline.sources.base import NotConfigured, ParseError, ParseResult, RawPart, RawPayload, Source
from pipeline.sources.fx import FxError, FxRates
from pipeline.sources.http import HttpStatusError, ResponseTooLarge, SourceClient

Outcome = Literal["ok", "partial", "empty", "unchanged", "http_error", "timeout", "network_error", "too_large",
                  "parse_error", "not_configured", "gated", "missing"]


class FetchLogEntry(BaseModel):
    source: str
    provider: str
    started_at: datetime
    finished_at: datetime
    outcome: Outcome
    http_status: int | None = None
    message: str | None = None
    offers: int = 0
    rejected: int = 0
    rejected_reasons: list[str] = Field(default_factory=list)
    ignored: dict[str, int] = Field(default_factory=dict)  # rows that are not GPU offers, counted by reason
    unmapped: list[str] = Field(default_factory=list)
    bytes: int = 0
    sha256: str | None = None
    raw_path: str | None = None  # metadata file of the landed payload
    retry_waits: list[float] = Field(default_factory=list)


def _stamp(when: datetime) -> tuple[str, str]:
    when = when.astimezone(UTC)
    return when.strftime("%Y-%m-%d"), when.strftime("%H%M%S.%f") + "Z"


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(path)


def land(raw: RawPayload, data_dir: Path) -> Path:
    """Write every part gzip-compressed plus one metadata file; return the metadata path."""
    day, stamp = _stamp(raw.fetched_at)
    folder = data_dir / "raw" / raw.source / day
    parts = []
    for n, part in enumerate(raw.parts):
        body_path = folder / f"{stamp}.{n}.body.gz"
        _atomic_write(body_path, gzip.compress(part.body, mtime=0))
        parts.append({"url": part.url, "status": part.status, "headers": part.headers, "sha256": part.sha256,
                      "size": len(part.body), "body": body_path.name})
    meta = {"source": raw.source, "fetched_at": raw.fetched_at.isoformat(), "sha256": raw.sha256, "size": raw.size,
            "parts": parts}
    meta_path = folder / f"{stamp}.json"
    _atomic_write(meta_path, json.dumps(meta, indent=1).encode())
    return meta_path


def load_landed(meta_path: Path) -> RawPayload:
    """Read a landed payload back, byte for byte, e.g. to re-parse history after a parser fix."""
    meta = json.loads(meta_path.read_text())
    parts = tuple(RawPart(url=p["url"], status=p["status"], headers=p["headers"],
                          body=gzip.decompress((meta_path.parent / p["body"]).read_bytes()))
                  for p in meta["parts"])
    return RawPayload(source=meta["source"], fetched_at=datetime.fromisoformat(meta["fetched_at"]), parts=parts)


def landed_payloads(data_dir: Path, source: str) -> list[Path]:
    return sorted((data_dir / "raw" / source).glob("*/*Z.json"))


def append_log(entry: FetchLogEntry, data_dir: Path) -> None:
    path = data_dir / "raw" / "fetch_log.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fh.write(entry.model_dump_json() + "\n")


def read_log(data_dir: Path) -> list[FetchLogEntry]:
    path = data_dir / "raw" / "fetch_log.jsonl"
    if not path.exists():
        return []
    return [FetchLogEntry.model_validate_json(line) for line in path.read_text().splitlines() if line.strip()]


def _validators_path(data_dir: Path, source: str) -> Path:
    return data_dir / "raw" / source / "validators.json"


def run_source(source: Source, client: SourceClient, data_dir: Path, rates: FxRates | None = None, *,
               replay: bool = False, now: datetime | None = None) -> tuple[FetchLogEntry, ParseResult | None]:
    """Fetch, land, parse one source; record the attempt in the fetch log whatever happens."""
    started = now or datetime.now(UTC)
    base = dict(source=source.name, provider=source.provider, started_at=started)

    def finish(outcome: Outcome, **extra) -> FetchLogEntry:  # type: ignore[no-untyped-def]
        waits = list(getattr(client._transport, "waits", []))
        entry = FetchLogEntry(finished_at=datetime.now(UTC), outcome=outcome, retry_waits=waits, **base, **extra)
        append_log(entry, data_dir)
        return entry

    if not replay and not source.configured():
        return finish("not_configured", message=f"set {', '.join(source.key_env)} to enable this source"), None
    vpath = _validators_path(data_dir, source.name)
    if source.conditional and vpath.exists():
        client.validators.update(json.loads(vpath.read_text()))
    try:
        raw = source.fetch(client)
    except NotConfigured as exc:
        return finish("not_configured", message=str(exc)), None
    except HttpStatusError as exc:
        failed = RawPayload(source=source.name, fetched_at=started, parts=(exc.part,))
        path = land(failed, data_dir)
        return finish("http_error", http_status=exc.part.status, message=str(exc), bytes=len(exc.part.body),
                      raw_path=str(path)), None
    except httpx.TimeoutException as exc:
        return finish("timeout", message=f"{type(exc).__name__}: {exc}"), None
    except ResponseTooLarge as exc:
        return finish("too_large", message=str(exc)), None
    except httpx.HTTPError as exc:
        return finish("network_error", message=f"{type(exc).__name__}: {exc}"), None
    recorded = {p.headers.get("x-vramlab-observed-at") for p in raw.parts if p.status == 200}
    if len(recorded) == 1 and None not in recorded:  # a replayed snapshot keeps the time it was observed
        started = datetime.fromisoformat(recorded.pop())
        base["started_at"] = started
    if raw.fetched_at != started:
        raw = raw.model_copy(update={"fetched_at": started})
    path = land(raw, data_dir)
    landed = dict(bytes=raw.size, sha256=raw.sha256, raw_path=str(path))
    if source.conditional:
        _validators_path(data_dir, source.name).write_text(json.dumps(client.validators))
    if raw.parts and all(p.status == 304 for p in raw.parts):
        return finish("unchanged", **landed), None
    try:
        result = source.parse(raw, rates)
    except (ParseError, FxError) as exc:
        return finish("parse_error", message=str(exc), **landed), None
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        return finish("parse_error", message=f"{source.name}: unexpected payload shape ({type(exc).__name__}: {exc})",
                      **landed), None
    if not source.yields_offers:
        outcome: Outcome = "ok"
    else:
        outcome = "ok" if result.offers and not result.rejected else "partial" if result.offers else "empty"
    message = f"{len(result.rejected)} rows rejected, none usable" if outcome == "empty" and result.rejected else None
    return finish(outcome, offers=len(result.offers), rejected=len(result.rejected), message=message,
                  rejected_reasons=result.rejected[:20], ignored=result.ignored, unmapped=result.unmapped,
                  **landed), result
