"""Any Hub model on demand: a repo id that is neither tracked nor in the local data is fetched through
the Hub source's own client (``ingest_model``: model info, ``config.json`` at its sha, the ModelOpt sidecar and
``model.safetensors.index.json`` when the repo has them, every shard's header by range request) and kept in the
data directory's look-up cache, ``<data dir>/cache/hub-lookups/`` (its own ``hub/`` revision store, landed raw
payloads and fetch log, apart from the pipeline's: a look-up never changes what a run ingests).

Live (``VRAMLAB_LIVE=1``) it asks huggingface.co; otherwise the Hub replay bundle answers (``pipeline/replay/hub``,
where ``lookups/`` holds recordings of a few untracked models). A repo neither can answer gets one line saying how
to get an answer: pass a ``config.json`` path, or run with ``VRAMLAB_LIVE=1``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pipeline.data_dir import REVISION_SHA, DataDir
from pipeline.errors import UserError

#: ``org/name`` as the Hub spells repo ids (letters, digits, ``-``, ``_``, ``.``)
REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
HOW = "pass the path of its config.json (or its folder), or run with VRAMLAB_LIVE=1 to fetch it from the Hub"


class LookupError_(UserError):  # noqa: N801 - LookupError is a builtin
    """A Hub repo the look-up could not answer: one line saying why and what to do; ``outcome`` is the fetch
    log's (``missing``: no such repo)."""

    def __init__(self, message: str, outcome: str = "") -> None:
        super().__init__(message)
        self.outcome = outcome


def lookup_root(data_dir: Path) -> Path:
    return DataDir(data_dir).lookups.root


def is_repo_id(text: str) -> bool:
    return bool(REPO_ID.match(text)) and not text.endswith(".json")


def hub_record(layout: DataDir, repo: str) -> tuple[dict[str, Any], str] | None:
    """The latest kept revision of ``repo`` (its id matched case-insensitively) in a data directory's Hub store, as
    ``HubState`` writes it: (the stored JSON, its sha), or None. Plain JSON reading, no pydantic or httpx (the
    CLI's quick path)."""
    try:
        state = json.loads(layout.hub_state.read_text())
    except (OSError, ValueError):
        return None
    key = next((k for k in state if k.lower() == repo.lower()), None)
    sha = (state.get(key) or {}).get("sha") if key else None
    if not key or not isinstance(sha, str) or not REVISION_SHA.match(sha) or not REPO_ID.match(key):
        return None
    record = layout.hub_revision(key, sha)
    try:
        return json.loads(record.read_text()), sha
    except (OSError, ValueError):
        return None


def cached(data_dir: Path, repo: str) -> dict[str, Any] | None:
    """The cached revision of ``repo`` as stored JSON (``HubModel`` fields), or None; plain JSON reading, no
    pydantic or httpx (the CLI's quick path)."""
    found = hub_record(DataDir(data_dir).lookups, repo)
    if found is None:
        return None
    model = found[0]
    recorded = recorded_at(data_dir, repo)
    return model | {"recorded_at": recorded} if recorded else model


def recorded_at(data_dir: Path, repo: str) -> str | None:
    """When the replay bundle's recording of ``repo`` was captured, for a look-up answered offline: the latest
    capture time (``x-vramlab-observed-at``, pipeline/sources/replay.py) in the payload its last successful fetch
    landed; None for a live fetch (no such header) or when the log or payload is gone."""
    root = lookup_root(data_dir)
    try:
        lines = DataDir(root).fetch_log.read_text().splitlines()
    except OSError:
        return None
    raw = None
    for line in reversed(lines):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("source", "").lower() == f"hub:{repo}".lower() and entry.get("outcome") == "ok":
            raw = entry.get("raw_path")
            break
    try:
        landed = json.loads((root / raw).read_text()) if raw else {}
    except (OSError, ValueError):
        return None
    times = [part.get("headers", {}).get("x-vramlab-observed-at") for part in landed.get("parts", [])]
    return max((t for t in times if t), default=None)


def canonical_repo(repo: str, *, live: bool) -> str:
    """The repo id as the Hub spells it. Offline the replay manifest's spelling (repo ids are case-insensitive on
    the Hub, recordings are keyed by URL); live the Hub answers any case and its model info gives the id."""
    if live:
        return repo
    from pipeline.sources.huggingface import HUB
    from pipeline.sources.replay import REPLAY_ROOT

    wanted = f"{HUB}/api/models/{repo}?blobs=true".lower()
    manifest = json.loads((REPLAY_ROOT / "hub" / "manifest.json").read_text())["responses"]
    for entry in manifest:
        if entry["url"].lower() == wanted:
            return entry["url"][len(f"{HUB}/api/models/"):].removesuffix("?blobs=true")
    return repo


def fetch(data_dir: Path, repo: str, *, live: bool) -> dict[str, Any]:
    """Fetch ``repo`` through the Hub source's client into the look-up cache; the stored revision as JSON.
    Raises :class:`LookupError_` (one line) when the Hub (or, offline, the replay bundle) has no answer."""
    from pipeline.ingest.models import hub_client
    from pipeline.sources.huggingface import HubState, WatchEntry, ingest_model

    root = lookup_root(data_dir)
    org, name = repo.split("/", 1)
    entry = WatchEntry(id=name.lower(), repo=repo, name=name, lab=org, country="unknown")
    try:
        with hub_client(replay=not live) as client:
            log, model = ingest_model(entry, client, root, HubState(root))
    except OSError as exc:  # the cache cannot be written (read-only data directory)
        raise LookupError_(f"{repo}: cannot keep the Hub look-up under {root} ({exc.strerror or exc})") from None
    if model is not None:
        stored = json.loads(model.model_dump_json())
        recorded = None if live else recorded_at(data_dir, model.repo)
        return stored | {"recorded_at": recorded} if recorded else stored
    raise LookupError_(failure(repo, log.outcome, log.message, log.http_status, live=live), log.outcome)


def failure(repo: str, outcome: str, message: str | None, status: int | None, *, live: bool) -> str:
    """The one line a failed look-up prints: what happened and how to get an answer anyway."""
    if outcome == "missing":
        where = "huggingface.co" if live else "the offline replay bundle"
        why = f"{repo} is not tracked, not in the local data, and {where} has no such repo"
    elif outcome == "gated":
        return (f"{repo} is gated on the Hub (HTTP {status}): accept its licence on huggingface.co and set HF_TOKEN, "
                "or pass the path of its config.json")
    elif outcome == "parse_error":
        why = f"{repo}: its config.json cannot be sized ({message})"
    else:
        why = f"{repo}: the Hub look-up failed ({outcome}: {message})"
    return f"{why}; {HOW if not live else 'pass the path of its config.json (or its folder) instead'}"


def hub_model(data_dir: Path, repo: str, *, live: bool) -> dict[str, Any]:
    """The look-up cache's revision of ``repo``, fetched on first use."""
    return cached(data_dir, repo) or fetch(data_dir, repo, live=live)
