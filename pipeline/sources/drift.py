"""Drift canaries (live mode): a fetch whose payload no longer looks like the last good one marks its source
``degraded`` instead of replacing its offers.

Three canaries, each compared with the source's last good fetch (``raw/<source>/baseline.json``, written after
every ``ok``/``partial`` live fetch):

- **shape**: the top-level keys of every JSON part (the keys of the items for a list), or the CSV header. A key
  that appears or disappears is an unknown shape: the parser may be reading a field that moved.
- **enum values**: values a parser branches on (``Source.enum_values``, e.g. RunPod's ``stockStatus``, Azure's
  ``type``) that are not among the values the parser knows (``Source.known_enums``).
- **volume**: fewer than :data:`DROP_FRACTION` of the last good fetch's offers (a more than 50 % drop), or more
  than :data:`GROWTH_FACTOR` times as many (a flood: a source answering offers it never had, in invented zones,
  is held back like a fall; trusted, it would become the baseline and the next true answer would look like a
  collapse).

A degraded fetch is landed and logged like any other (outcome ``degraded``, ``drift`` says what changed), but its
offers are not loaded: the last good observations stay published (they turn stale after 2 hours, so nothing
silently stays eligible), the manifest and the raw asset's metadata say ``degraded`` with the reasons. The same
drift seen on :data:`ACCEPT_AFTER` consecutive fetches becomes the new baseline (a real change at the source,
handled by the parser, is accepted after three hours of hourly runs; the drift stays in the fetch log).
Replayed fetches are never judged: recordings are not live data.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from pipeline.data_dir import DataDir
from pipeline.sources.base import ParseResult, RawPayload, Source

DROP_FRACTION = 0.5
GROWTH_FACTOR = 3.0
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?%?x?")
ACCEPT_AFTER = 3
MIN_OFFERS_FOR_DROP = 4  # a source of 1-3 offers moves by more than half with one listing: too noisy to judge


class Baseline(BaseModel):
    """What the last good fetch looked like, plus the drift currently repeating (``streak``)."""

    fetched_at: datetime
    offers: int
    shape: list[str]
    enums: dict[str, list[str]] = Field(default_factory=dict)
    streak_signature: str | None = None
    streak: int = 0


def _json_lines(text: str) -> list[Any] | None:
    """Every non-empty line of ``text`` read as JSON, or None when some line is not JSON (or none is there)."""
    try:
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
    except ValueError:
        return None
    return lines or None


def shape_of(raw: RawPayload) -> list[str]:
    """Top-level keys of every 200 part: JSON object keys, ``[]`` plus item keys for a JSON list, the keys of every
    line's object for JSON Lines (the same keys as a one-line file's), ``csv:`` plus the header for a CSV, ``text``
    for anything else (an HTML page)."""
    keys: set[str] = set()
    for part in raw.parts:
        if part.status != 200:
            continue
        text = part.body.decode("utf-8-sig", errors="replace")
        try:
            body: Any = json.loads(text)
        except ValueError:
            lines = _json_lines(text)
            if lines is not None:
                keys.update(k for line in lines if isinstance(line, dict) for k in line)
            elif "," in text.split("\n", 1)[0] and not text.lstrip().startswith("<"):
                keys.update(f"csv:{c}" for c in next(csv.reader(io.StringIO(text)), []))
            else:
                keys.add("text")
            continue
        if isinstance(body, dict):
            keys.update(body)
        elif isinstance(body, list):
            keys.add("[]")
            keys.update(k for item in body if isinstance(item, dict) for k in item)
    return sorted(keys)


def _path(data_dir: Path, source: str) -> Path:
    return DataDir(data_dir).drift_baseline(source)


def load_baseline(data_dir: Path, source: str) -> Baseline | None:
    try:
        return Baseline.model_validate_json(_path(data_dir, source).read_text())
    except (OSError, ValueError):
        return None  # no good fetch yet (or an unreadable file): nothing to compare with


def _save(data_dir: Path, source: str, baseline: Baseline) -> None:
    path = _path(data_dir, source)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(baseline.model_dump_json(indent=1))
        tmp.replace(path)
    except OSError:  # a full disk: the previous baseline stays the reference, the fetch itself is unharmed
        tmp.unlink(missing_ok=True)


def changes(source: Source, raw: RawPayload, result: ParseResult, baseline: Baseline | None) -> list[str]:
    """What differs from the last good fetch (empty: nothing), one sentence per canary."""
    out: list[str] = []
    enums = {k: sorted(v) for k, v in source.enum_values(raw).items()}
    for name, values in enums.items():
        unknown = [v for v in values if v not in source.known_enums.get(name, ())]
        if unknown:
            out.append(f"new {name} values {unknown} (known: {list(source.known_enums.get(name, ()))})")
    if baseline is None:
        return out
    shape = shape_of(raw)
    added, missing = sorted(set(shape) - set(baseline.shape)), sorted(set(baseline.shape) - set(shape))
    if added or missing:
        out.append("top-level shape changed since the last good fetch of "
                   f"{baseline.fetched_at.isoformat()}: " + "; ".join(
                       ([f"new keys {added}"] if added else []) + ([f"missing keys {missing}"] if missing else [])))
    offers = len(result.offers)
    if baseline.offers >= MIN_OFFERS_FOR_DROP and offers < DROP_FRACTION * baseline.offers:
        out.append(f"offers fell from {baseline.offers} to {offers} "
                   f"({(offers - baseline.offers) / baseline.offers:.0%}) since the last good fetch of "
                   f"{baseline.fetched_at.isoformat()}")
    elif baseline.offers >= MIN_OFFERS_FOR_DROP and offers > GROWTH_FACTOR * baseline.offers:
        out.append(f"offers grew from {baseline.offers} to {offers} ({offers / baseline.offers:.1f}x) since the last "
                   f"good fetch of {baseline.fetched_at.isoformat()}")
    return out


def judge(source: Source, raw: RawPayload, result: ParseResult, data_dir: Path) -> list[str]:
    """The drift of a live fetch that parsed (empty: healthy, and the baseline moves to this fetch). A drift seen
    :data:`ACCEPT_AFTER` times in a row is accepted as the new baseline and reported as accepted."""
    baseline = load_baseline(data_dir, source.name)
    found = changes(source, raw, result, baseline)
    fresh = Baseline(fetched_at=raw.fetched_at, offers=len(result.offers), shape=shape_of(raw),
                     enums={k: sorted(v) for k, v in source.enum_values(raw).items()})
    if not found:
        _save(data_dir, source.name, fresh)
        return []
    # the same drift, whatever its figures: a real change repeats with counts that move a little every hour
    signature = hashlib.sha256("|".join(sorted(_NUMBER.sub("#", s.split(" since ")[0]) for s in found))
                               .encode()).hexdigest()[:16]
    streak = (baseline.streak + 1) if baseline and baseline.streak_signature == signature else 1
    if streak >= ACCEPT_AFTER:
        _save(data_dir, source.name, fresh)  # seen on ACCEPT_AFTER fetches in a row: the source really changed
        return []
    kept = baseline or fresh  # no good fetch yet: this one is the reference the streak is counted against
    _save(data_dir, source.name, kept.model_copy(update={"streak_signature": signature, "streak": streak}))
    return found
