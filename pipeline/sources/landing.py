"""Raw landing and the fetch log: every fetch is written as received before it is parsed.

Layout under the data directory::

    raw/<source>/<YYYY-MM-DD>/<HHMMSS.ffffff>Z.json          fetch metadata (url, status, headers, sha256, size)
    raw/<source>/<YYYY-MM-DD>/<HHMMSS.ffffff>Z.<n>.body.gz   part n as received, gzip-compressed
    raw/<source>/validators.json                              ETag / Last-Modified seen last, per URL
    raw/fetch_log.jsonl                                       one line per attempt, whatever its outcome

``run_source`` never raises for a source's own failure: it returns the outcome, so one failing source never
stops the others. The same mechanism lands Hub payloads (``pipeline/sources/huggingface.py``).

Robustness rules:
- every landed fetch gets its own files, even when two fetches carry the same timestamp (replay does): a later
  bad body never overwrites an earlier good one;
- ``raw_path`` in the fetch log is relative to the data directory, so a moved or restored ``data/`` still
  re-parses (:func:`resolve_raw_path` also maps old absolute paths);
- the fetch log is appended one whole line per ``write`` and fsynced; a torn line (a full disk, a killed process)
  is skipped and reported by :func:`read_log_report`, never fatal to the readers;
- messages are redacted (:func:`pipeline.sources.http.redact`) before they are written anywhere.
"""

from __future__ import annotations

import gzip
import json
import os
import time
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Literal

import httpx
from pydantic import BaseModel, Field, ValidationError, field_validator

from pipeline.data_dir import DataDir
from pipeline.settings import variable
from pipeline.sources.base import (
    NotConfigured,
    ParseError,
    ParseResult,
    RawPart,
    RawPayload,
    Source,
    SourceError,
)
from pipeline.sources.drift import judge
from pipeline.sources.fx import FxError, FxRates
from pipeline.sources.http import (
    HttpStatusError,
    ResponseTooLarge,
    SourceClient,
    http_settings,
    redact,
    scrub,
)

Outcome = Literal["ok", "partial", "empty", "unchanged", "http_error", "timeout", "network_error", "too_large",
                  "parse_error", "not_configured", "gated", "missing", "error", "degraded", "clock_ahead",
                  "write_error"]
#: a fetch whose payload was landed and is loaded (an empty answer loads as "this source lists nothing")
LOADABLE: tuple[Outcome, ...] = ("ok", "partial", "empty")
#: a fetch that landed offers
WITH_OFFERS: tuple[Outcome, ...] = ("ok", "partial")
#: a fetch that answered as a healthy source does: offers landed, or the same as last time (empty is suspicious)
HEALTHY: tuple[Outcome, ...] = ("ok", "partial", "unchanged")
#: a fetch that finished with an answer of the source's (every other outcome is a failure of some kind)
ANSWERED: tuple[Outcome, ...] = ("ok", "partial", "empty", "unchanged")


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
    raw_path: str | None = None  # metadata file of the landed payload, relative to the data directory
    retry_waits: list[float] = Field(default_factory=list)
    drift: list[str] = Field(default_factory=list)  # what a live fetch changed (outcome degraded: pipeline/sources/drift)
    server_date: datetime | None = None  # the newest ``Date`` header of the answer: the source's own clock

    @field_validator("message", "raw_path")
    @classmethod
    def _no_secrets(cls, value: str | None) -> str | None:
        return redact(value) if value else value

    @field_validator("rejected_reasons", "unmapped", "drift")
    @classmethod
    def _no_secrets_in_lists(cls, value: list[str]) -> list[str]:
        return [redact(v) for v in value]


def _stamp(when: datetime) -> tuple[str, str]:
    when = when.astimezone(UTC)
    return when.strftime("%Y-%m-%d"), when.strftime("%H%M%S.%f") + "Z"


def _atomic_write(path: Path, data: bytes, written: list[Path] | None = None) -> None:
    """Write ``path`` whole (a temporary file renamed); fsynced now, or, with ``written``, listed there for the
    caller to fsync with others (:class:`LandingBatch`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            if written is None:
                fh.flush()
                os.fsync(fh.fileno())
        tmp.replace(path)
    except OSError:
        tmp.unlink(missing_ok=True)  # a full disk: give the partial file's space back
        raise
    if written is not None:
        written.append(path)


def _scrubbed(raw: RawPayload) -> RawPayload:
    """``raw`` with every configured secret removed from each part's body, URL and headers. Bodies fetched by
    :func:`pipeline.sources.http.get_part` are scrubbed already; this is the landing's own gate for parts built
    any other way, so no secret is ever written to ``raw/`` (append-only: it would be kept for good)."""
    parts = []
    for part in raw.parts:
        clean = part.model_copy(update={"body": scrub(part.body, error=part.status >= 400), "url": redact(part.url),
                                        "headers": {k: redact(v) for k, v in part.headers.items()}})
        parts.append(clean if clean != part else part)
    return raw if all(a is b for a, b in zip(parts, raw.parts, strict=True)) else \
        raw.model_copy(update={"parts": tuple(parts)})


def land(raw: RawPayload, data_dir: Path, written: list[Path] | None = None) -> Path:
    """Write every part gzip-compressed plus one metadata file; return the metadata path. A fetch whose
    timestamp is already taken (replay stamps every fetch with the snapshot time) gets the next free suffix.
    With ``written``, the files are not fsynced here but listed there (:class:`LandingBatch` syncs them)."""
    day, stamp = _stamp(raw.fetched_at)
    folder = DataDir(data_dir).source(raw.source) / day
    n = 1
    base_stamp = stamp
    while (folder / f"{stamp}.json").exists():
        stamp = f"{base_stamp.removesuffix('Z')}-{n}Z"
        n += 1
    raw = _scrubbed(raw)
    parts = []
    for n, part in enumerate(raw.parts):
        body_path = folder / f"{stamp}.{n}.body.gz"
        _atomic_write(body_path, gzip.compress(part.body, mtime=0), written)
        parts.append({"url": part.url, "status": part.status, "headers": part.headers, "sha256": part.sha256,
                      "size": len(part.body), "body": body_path.name})
    meta = {"source": raw.source, "fetched_at": raw.fetched_at.isoformat(), "sha256": raw.sha256, "size": raw.size,
            "parts": parts}
    meta_path = folder / f"{stamp}.json"
    _atomic_write(meta_path, json.dumps(meta, indent=1).encode(), written)
    return meta_path


def load_landed(meta_path: Path) -> RawPayload:
    """Read a landed payload back, byte for byte, e.g. to re-parse history after a parser fix."""
    meta = json.loads(meta_path.read_text())
    parts = tuple(RawPart(url=p["url"], status=p["status"], headers=p["headers"],
                          body=gzip.decompress((meta_path.parent / p["body"]).read_bytes()))
                  for p in meta["parts"])
    return RawPayload(source=meta["source"], fetched_at=datetime.fromisoformat(meta["fetched_at"]), parts=parts)


def landed_payloads(data_dir: Path, source: str) -> list[Path]:
    """Landed metadata files of a source, oldest first (suffixed duplicates of one timestamp after the first)."""
    return sorted(DataDir(data_dir).source(source).glob("*/*Z.json"), key=lambda p: (p.parent.name, _stamp_key(p.name)))


def _stamp_key(name: str) -> tuple[str, int]:
    stem = name.removesuffix("Z.json")
    stamp, _, n = stem.partition("-")
    return stamp, int(n) if n.isdigit() else 0


def relative_raw_path(path: Path | str, data_dir: Path) -> str:
    """A landed path as stored in the fetch log: relative to the data directory when it lies inside it."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(data_dir.resolve()))
    except ValueError:
        return str(path)


def resolve_raw_path(raw_path: str, data_dir: Path) -> Path:
    """Where a fetch log's ``raw_path`` is now: relative paths under ``data_dir``; an absolute path from an older
    log that no longer exists (``data/`` moved or restored elsewhere) is mapped by its ``raw/...`` tail."""
    path = Path(raw_path)
    if not path.is_absolute():
        return data_dir / path
    if path.exists():
        return path
    parts = path.parts
    if "raw" in parts:
        tail = Path(*parts[len(parts) - 1 - parts[::-1].index("raw"):])
        if (data_dir / tail).exists():
            return data_dir / tail
    return path


def _log_path(data_dir: Path) -> Path:
    return DataDir(data_dir).fetch_log


def append_log(entry: FetchLogEntry, data_dir: Path) -> None:
    """Append one line with a single ``write`` on an ``O_APPEND`` descriptor, then fsync: a crash leaves either
    the whole line or a torn tail that :func:`read_log` skips. A torn tail from an earlier crash is closed first
    so the new line starts on a line of its own."""
    append_logs([entry], data_dir)


def append_logs(entries: list[FetchLogEntry], data_dir: Path) -> None:
    """:func:`append_log` for several entries: their lines in one ``write``, one fsync."""
    if not entries:
        return
    path = _log_path(data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for entry in entries:
        if entry.raw_path and Path(entry.raw_path).is_absolute():
            entry = entry.model_copy(update={"raw_path": relative_raw_path(entry.raw_path, data_dir)})
        lines.append(entry.model_dump_json() + "\n")
    line = "".join(lines).encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        size = os.fstat(fd).st_size
        if size:
            with open(path, "rb") as fh:
                fh.seek(size - 1)
                if fh.read(1) != b"\n":
                    line = b"\n" + line
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


class LandingBatch:
    """Fetches landed and logged together (the Hub step lands one payload per tracked model every hour; with
    2,000 models, three fsyncs each are ~6 s of the run). :meth:`land` writes a payload's files without
    syncing them, :meth:`log` keeps its log line; every ``every`` lines and at the end (:meth:`flush`, also
    when the block fails) the files are fsynced, in a few threads, and only then their lines appended in one
    write and one fsync. The rule of the single-fetch path holds: a log line is on disk only after its payload
    is. A crash before a flush leaves payload files no log line names (never read: every reader goes through
    the log) and the fetches unlogged, so they are fetched again."""

    def __init__(self, data_dir: Path, every: int = 100):
        self.data_dir, self.every = data_dir, max(1, every)
        self.written: list[Path] = []
        self.entries: list[FetchLogEntry] = []

    def land(self, raw: RawPayload) -> Path:
        return land(raw, self.data_dir, self.written)

    def log(self, entry: FetchLogEntry) -> None:
        self.entries.append(entry)
        if len(self.entries) >= self.every:
            self.flush()

    def flush(self) -> None:
        if self.written:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=8) as pool:  # (fsync releases the GIL)
                list(pool.map(fsync_path, self.written))
        append_logs(self.entries, self.data_dir)
        self.written, self.entries = [], []

    def __enter__(self) -> LandingBatch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.flush()


def fsync_path(path: Path) -> None:
    """Flush a file's or a folder's entry to disk (a rename is durable once its folder is synced)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class LogReport(BaseModel):
    entries: list[FetchLogEntry]
    torn: list[tuple[int, str]] = Field(default_factory=list)  # (line number, first 200 characters)
    lines: list[int] = Field(default_factory=list)  # each entry's line number: the order fetches happened in


def read_log_report(data_dir: Path) -> LogReport:
    """Every readable fetch-log line, and the lines that are not (torn by a crash or a full disk)."""
    path = _log_path(data_dir)
    if not path.exists():
        return LogReport(entries=[])
    entries, torn, lines = [], [], []
    for number, line in enumerate(path.read_bytes().split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            entries.append(FetchLogEntry.model_validate_json(line))
            lines.append(number)
        except (ValidationError, ValueError):
            torn.append((number, line[:200].decode("utf-8", "replace")))
    return LogReport(entries=entries, torn=torn, lines=lines)


def read_log(data_dir: Path) -> list[FetchLogEntry]:
    """The readable fetch-log entries (torn lines skipped; :func:`read_log_report` names them)."""
    return read_log_report(data_dir).entries


#: how far the newest recorded fetch may lie ahead of this run's clock before the run refuses to go on
CLOCK_TOLERANCE_SECONDS = 300


class ClockBehind(Exception):
    """This machine's clock is behind what was already recorded: observations would be stored out of order."""


class ClockAhead(Exception):
    """This machine's clock is ahead of the sources' own clocks: what it records would be dated in the future."""


def server_clock(parts: tuple[RawPart, ...] | list[RawPart]) -> datetime | None:
    """The newest ``Date`` header among the answer's parts (RFC 9110: the origin's clock when it answered)."""
    dates = []
    for part in parts:
        try:
            when = parsedate_to_datetime(part.headers.get("date", ""))
        except (TypeError, ValueError, IndexError):
            continue
        dates.append(when if when.tzinfo else when.replace(tzinfo=UTC))
    return max(dates, default=None)


def clock_ahead_by(entry: FetchLogEntry) -> float:
    """Seconds by which the recording machine's clock was ahead of the source's (0 when not known)."""
    if entry.server_date is None:
        return 0.0
    return (entry.started_at - entry.server_date).total_seconds()


def _trusted(entry: FetchLogEntry) -> bool:
    """A fetch whose recorded time can be believed: not refused for a clock ahead, nor dated well past the
    source's own ``Date``."""
    return entry.outcome != "clock_ahead" and clock_ahead_by(entry) <= CLOCK_TOLERANCE_SECONDS


def check_clock(data_dir: Path, now: datetime | None = None) -> None:
    """Refuse a live run whose clock is behind the newest trusted fetch already in the fetch log (by more than
    :data:`CLOCK_TOLERANCE_SECONDS`): its observations would be stored as older than prices they replace, and
    its snapshot would become ``latest`` dated in the past. A fetch recorded by a machine whose clock was ahead of
    the source's (its ``Date`` header says so) is not trusted: it never locks out a run on the right clock.
    ``VRAMLAB_ALLOW_CLOCK_BEHIND=1`` (``vramlab run --allow-clock-behind``) lets such a run go on."""
    if variable("VRAMLAB_ALLOW_CLOCK_BEHIND").on():
        return
    now = now or datetime.now(UTC)
    newest = max((e.started_at for e in read_log(data_dir) if _trusted(e)), default=None)
    if newest is not None and (newest - now).total_seconds() > CLOCK_TOLERANCE_SECONDS:
        raise ClockBehind(f"this machine's clock ({now:%Y-%m-%d %H:%M:%S} UTC) is behind the newest recorded fetch "
                          f"({newest:%Y-%m-%d %H:%M:%S} UTC): fix the clock, or run with --allow-clock-behind "
                          "(VRAMLAB_ALLOW_CLOCK_BEHIND=1)")


def _validators_path(data_dir: Path, source: str) -> Path:
    return DataDir(data_dir).validators(source)


def run_source(source: Source, client: SourceClient, data_dir: Path, rates: FxRates | None = None, *,
               replay: bool = False, now: datetime | None = None) -> tuple[FetchLogEntry, ParseResult | None]:
    """Fetch, land, parse one source; record the attempt in the fetch log whatever happens."""
    started = now or datetime.now(UTC)
    base = dict(source=source.name, provider=source.provider, started_at=started)

    waits_before = len(getattr(client._transport, "waits", []))  # the client may be shared by several sources

    def finish(outcome: Outcome, **extra) -> FetchLogEntry:  # type: ignore[no-untyped-def]
        waits = list(getattr(client._transport, "waits", []))[waits_before:]
        entry = FetchLogEntry(finished_at=datetime.now(UTC), outcome=outcome, retry_waits=waits, **base, **extra)
        try:
            append_log(entry, data_dir)
        except OSError as exc:  # a full disk: this source's attempt goes unrecorded, the others go on
            entry = entry.model_copy(update={"outcome": "write_error", "message": redact(
                f"{entry.message + '; ' if entry.message else ''}fetch log not written ({exc})")})
        return entry

    if not replay and not source.configured():
        return finish("not_configured", message=f"set {', '.join(source.key_env)} to enable this source"), None
    vpath = _validators_path(data_dir, source.name)
    if source.conditional and vpath.exists():
        try:
            client.validators.update(json.loads(vpath.read_text()))
        except (OSError, ValueError):
            pass  # a damaged validators file only costs one unconditional request
    client.received = []
    # one total deadline for the whole fetch of this source (pages, regions, retries): an endless or trickling
    # answer ends the fetch as a timeout instead of holding the run and its lock
    client.deadline_at = time.monotonic() + http_settings()["source_deadline"]

    def land_received(**extra) -> dict:  # type: ignore[no-untyped-def]
        """Land what the failed fetch did receive (pages before the bad one, the bad body itself)."""
        received = tuple(getattr(client, "received", ()) or ())
        if not received:
            return extra
        failed = RawPayload(source=source.name, fetched_at=started, parts=received)
        try:
            path = land(failed, data_dir)
        except OSError as exc:
            return extra | {"message": f"{extra.get('message') or ''}; not landed ({exc})".lstrip("; ")}
        return dict(bytes=failed.size, sha256=failed.sha256, raw_path=relative_raw_path(path, data_dir)) | extra

    try:
        raw = source.fetch(client)
    except NotConfigured as exc:
        return finish("not_configured", message=str(exc)), None
    except HttpStatusError as exc:
        return finish("http_error", **land_received(http_status=exc.part.status, message=str(exc))), None
    except httpx.TimeoutException as exc:
        return finish("timeout", **land_received(message=f"{type(exc).__name__}: {exc}")), None
    except ResponseTooLarge as exc:
        return finish("too_large", **land_received(message=str(exc))), None
    except httpx.HTTPError as exc:
        return finish("network_error", **land_received(message=f"{type(exc).__name__}: {exc}")), None
    except (ParseError, FxError) as exc:  # a paged source reads each page to find the next one
        return finish("parse_error", **land_received(message=f"while fetching: {exc}")), None
    except Exception as exc:  # noqa: BLE001 - a source's own bug must not stop the other sources
        return finish("error", **land_received(
            message=f"{source.name}: fetch failed ({type(exc).__name__}: {exc})")), None
    recorded = {p.headers.get("x-vramlab-observed-at") for p in raw.parts if p.status == 200}
    if len(recorded) == 1 and None not in recorded:  # a replayed snapshot keeps the time it was observed
        started = datetime.fromisoformat(recorded.pop())
        base["started_at"] = started
    if raw.fetched_at != started:
        raw = raw.model_copy(update={"fetched_at": started})
    try:
        path = land(raw, data_dir)
    except OSError as exc:  # disk full, read-only: only this source's write failed; fetched again next run
        return finish("write_error", bytes=raw.size, sha256=raw.sha256,
                      message=f"{source.name}: payload not landed ({exc}); not loaded, fetched again next run"), None
    landed = dict(bytes=raw.size, sha256=raw.sha256, raw_path=relative_raw_path(path, data_dir))
    server = None if replay else server_clock(raw.parts)
    if server is not None:
        landed["server_date"] = server
        ahead = (started - server).total_seconds()
        if ahead > CLOCK_TOLERANCE_SECONDS:  # landed as fetched, never loaded: its times would lie in the future
            return finish("clock_ahead", message=f"this machine's clock ({started:%Y-%m-%d %H:%M:%S} UTC) is "
                          f"{ahead / 3600:.1f} h ahead of {source.name}'s ({server:%Y-%m-%d %H:%M:%S} UTC, its Date "
                          "header): nothing of this run is stored or published; fix the clock (NTP)", **landed), None
    if source.conditional:
        try:
            _validators_path(data_dir, source.name).write_text(json.dumps(client.validators))
        except OSError:
            pass  # not kept: the next fetch is unconditional, nothing else is lost
    if raw.parts and all(p.status == 304 for p in raw.parts):
        return finish("unchanged", **landed), None
    try:
        result = source.parse(raw, rates)
    except (ParseError, FxError) as exc:
        return finish("parse_error", message=str(exc), **landed), None
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, SourceError) as exc:
        return finish("parse_error", message=f"{source.name}: unexpected payload shape ({type(exc).__name__}: {exc})",
                      **landed), None
    except Exception as exc:  # noqa: BLE001 - a parser bug is this source's failure, not the run's
        return finish("error", message=f"{source.name}: parse failed ({type(exc).__name__}: {exc})", **landed), None
    if not source.yields_offers:
        outcome: Outcome = "ok"
    else:
        outcome = "ok" if result.offers and not result.rejected else "partial" if result.offers else "empty"
    message = f"{len(result.rejected)} rows rejected, none usable" if outcome == "empty" and result.rejected else None
    drift = judge(source, raw, result, data_dir) if source.yields_offers and not replay else []
    if drift:  # live drift canary: land and log it, but keep the last good offers (pending loads skip "degraded")
        outcome, message = "degraded", "drift: " + "; ".join(drift)
    return finish(outcome, offers=len(result.offers), rejected=len(result.rejected), message=message,
                  rejected_reasons=result.rejected[:20], ignored=result.ignored, unmapped=result.unmapped,
                  drift=drift, **landed), result
