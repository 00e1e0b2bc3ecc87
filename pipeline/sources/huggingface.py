"""Model ingestion from the Hugging Face Hub, through the same httpx stack, landing and fetch log as prices.

Per watchlist model: model info (``/api/models/{repo}?blobs=true``: sha, lastModified, gated, tags, pipeline
tag, safetensors parameter counts per dtype, files with sizes), then, only when the sha changed since the last
run, ``config.json`` at that sha, the ModelOpt ``hf_quant_config.json`` and ``model.safetensors.index.json`` when
the repo has them, ``tokenizer_config.json`` (chat template) and the GGUF repos' file listings.

Outcomes in the fetch log: ok, unchanged (same sha: nothing else fetched), gated (401/403), missing (404),
parse_error (malformed config, the field named), too_large, timeout, http_error, network_error.
``HF_TOKEN`` is read from the environment and sent as a header only; it is never logged or landed.
httpx is used rather than ``huggingface_hub`` so the Hub shares the price sources' retries, size caps, landing
and replay transport (docs/decisions.md).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel, Field, field_validator

from pipeline.data_dir import REVISION_SHA, DataDir
from pipeline.sources.base import RawPart, RawPayload
from pipeline.sources.http import HttpStatusError, ResponseTooLarge, get_part
from pipeline.sources.landing import FetchLogEntry, LandingBatch, Outcome, append_log, land
from sizing_core import ConfigError, parse_config
from sizing_core.config.safetensors import (
    CheckpointSummary,
    HeaderError,
    header_length,
    parse_header,
    shard_files,
    summarize,
)

HUB = "https://huggingface.co"
#: while ingesting many models, ``state.json`` is written after this many new records (and at the end)
STATE_FLUSH_EVERY = 100
WATCHLIST = Path(__file__).resolve().parent.parent / "data" / "watchlist.json"
CONFIG_MAX_BYTES = 10 * 2**20  # a config.json is kilobytes; anything near this is not a config
INDEX_MAX_BYTES = 32 * 2**20
HEADER_FIRST_BYTES = 64 * 2**10  # one range request covers most shard headers (8-byte length + JSON)
HEADER_MAX_BYTES = 64 * 2**20  # a safetensors header is kilobytes to a few MB; refuse anything near weights
GGUF_QUANT = re.compile(r"(?i)[-._](I?Q\d(?:_[A-Z0-9]+)*|BF16|F16|F32|MXFP4(?:_MOE)?|UD-[A-Z0-9_]+)"
                        r"(?:-\d{5}-of-\d{5})?\.gguf$")


#: the Hub's own repo id rules (huggingface_hub's ``validate_repo_id``): ``namespace/name`` of word characters,
#: ``-`` and ``.``, at most 96 each, starting and ending with a word character; no ``--``, no ``..``, no ``.git``
_REPO_PART = r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?"
REPO_ID = re.compile(rf"^{_REPO_PART}/{_REPO_PART}$")


def valid_repo_id(repo: object) -> bool:
    return isinstance(repo, str) and bool(REPO_ID.match(repo)) and "--" not in repo and ".." not in repo \
        and not repo.endswith(".git")


def check_repo_id(repo: object) -> str:
    """``repo`` when it is a valid Hub repo id; ValueError naming it otherwise (it reaches paths and URLs)."""
    if not valid_repo_id(repo):
        raise ValueError(f"not a Hub repo id (namespace/name of letters, digits, '-', '_', '.'): {str(repo)[:120]!r}")
    return repo  # type: ignore[return-value]


def check_revision(sha: object) -> str:
    if not isinstance(sha, str) or not REVISION_SHA.match(sha):
        raise ValueError(f"not a 40-hex revision id: {str(sha)[:60]!r}")
    return sha


class WatchEntry(BaseModel):
    id: str
    repo: str
    name: str
    lab: str
    country: str
    released: str | None = None
    base_model: str | None = None
    gguf_repos: list[str] = Field(default_factory=list)
    spec: str | None = None  # bundled manual spec id (no public config)

    @field_validator("repo")
    @classmethod
    def _hub_repo_id(cls, repo: str) -> str:
        return check_repo_id(repo)

    @field_validator("gguf_repos")
    @classmethod
    def _hub_repo_ids(cls, repos: list[str]) -> list[str]:
        return [check_repo_id(r) for r in repos]


class Watchlist(BaseModel):
    version: int
    updated: str
    description: str = ""
    models: list[WatchEntry]


def watchlist_path(data_dir: Path | None = None) -> Path:
    """The watchlist a data directory runs with: its own copy (``<data dir>/watchlist.json``, written by
    ``vramlab track``) when it has one, else the packaged ``pipeline/data/watchlist.json``."""
    own = DataDir(data_dir).watchlist if data_dir is not None else None
    return own if own is not None and own.is_file() else WATCHLIST


def load_watchlist(path: Path = WATCHLIST, *, data_dir: Path | None = None) -> Watchlist:
    """The packaged watchlist, or with ``data_dir`` that directory's own copy when it has one (an explicit
    ``path`` other than the packaged file wins)."""
    if data_dir is not None and path == WATCHLIST:
        path = watchlist_path(data_dir)
    return Watchlist.model_validate_json(path.read_text())


class DerivedFact(BaseModel):
    value: Any
    rule: str


class ShardRecord(BaseModel):
    file: str
    header_length: int
    data_bytes: int
    file_bytes: int
    tensors: int


class CheckpointHeaders(BaseModel):
    """Every shard header of one revision, read by HTTP range requests (weights never downloaded)."""

    shards: list[ShardRecord] = Field(default_factory=list)
    summary: CheckpointSummary | None = None
    error: str | None = None  # why the headers could not be read (the revision is still ingested)


class HubModel(BaseModel):
    """What the Hub says about one revision of a model, plus facts derived from it (each with its rule)."""

    id: str
    repo: str
    sha: str
    last_modified: str | None = None
    created_at: str | None = None
    gated: bool | str = False
    pipeline_tag: str | None = None
    tags: list[str] = Field(default_factory=list)
    license: str | None = None
    safetensors_parameters: dict[str, int] | None = None
    safetensors_total: int | None = None
    checkpoint_bytes: int | None = None
    config: dict[str, Any]
    hf_quant_config: dict[str, Any] | None = None
    gguf_files: dict[str, dict[str, Any]] | None = None  # quant type -> {"files": [...], "bytes": n, "repo": r}
    checkpoint_headers: CheckpointHeaders | None = None
    derived: dict[str, DerivedFact] = Field(default_factory=dict)
    fetched_at: datetime


def _auth_headers() -> dict[str, str]:
    token = os.environ.get("HF_TOKEN")
    return {"Authorization": f"Bearer {token}"} if token else {}


def gguf_files(listing: list[dict[str, Any]], repo: str) -> dict[str, dict[str, Any]]:
    """Group a GGUF repo's ``tree`` listing by quant type (split files summed)."""
    out: dict[str, dict[str, Any]] = {}
    for item in listing:
        path = str(item.get("path", ""))
        m = GGUF_QUANT.search(path)
        if item.get("type") != "file" or not m or "mmproj" in path.lower():
            continue
        quant = m.group(1).upper()
        slot = out.setdefault(quant, {"files": [], "bytes": 0, "repo": repo})
        slot["files"].append(path)
        slot["bytes"] += int(item.get("size") or (item.get("lfs") or {}).get("size") or 0)
    return out


def derive_facts(config: dict[str, Any], info: dict[str, Any], template: str | None) -> dict[str, DerivedFact]:
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    tags = [str(t).lower() for t in info.get("tags") or []]
    facts: dict[str, DerivedFact] = {}
    modalities = ["text"]
    if "vision_config" in config or "image-text-to-text" in tags:
        modalities.append("image")
    if any("video" in k for k in config) or "video-text-to-text" in tags:
        modalities.append("video")
    if "audio_config" in config or any("audio" in t for t in tags):
        modalities.append("audio")
    facts["modalities"] = DerivedFact(value=modalities, rule="vision_config/audio_config/video keys in config.json, "
                                                              "or image/video/audio pipeline tags")
    if template is not None:
        facts["tool_calling"] = DerivedFact(value="tools" in template, rule="chat template references `tools`")
        thinking = any(k in template for k in ("<think>", "enable_thinking", "reasoning_effort", "thinking"))
        facts["reasoning"] = DerivedFact(value=thinking, rule="chat template has <think>/enable_thinking/"
                                                               "reasoning_effort")
    else:
        tool = any(t in tags for t in ("function-calling", "tool-use", "tools"))
        facts["tool_calling"] = DerivedFact(value=True if tool else None,
                                           rule="Hub tags (no chat template fetched); null = unknown")
        facts["reasoning"] = DerivedFact(value=True if "reasoning" in tags else None,
                                         rule="Hub tags (no chat template fetched); null = unknown")
    ctx = text.get("max_position_embeddings") or text.get("model_max_length")
    facts["max_context"] = DerivedFact(value=ctx, rule="config max_position_embeddings (text_config when nested)")
    license_ = (info.get("cardData") or {}).get("license") or next(
        (t.split(":", 1)[1] for t in tags if t.startswith("license:")), None)
    facts["license"] = DerivedFact(value=license_, rule="model card license, else the license:* tag")
    return facts


class HubState:
    """Last seen sha per repo, and the revision history (``data/hub/``)."""

    def __init__(self, data_dir: Path):
        self.layout = DataDir(data_dir)
        self.root = self.layout.hub
        self.path = self.layout.hub_state
        self.state: dict[str, dict[str, Any]] = json.loads(self.path.read_text()) if self.path.exists() else {}
        self._deferred: int | None = None  # saves not yet in state.json while batched (None: write every save)
        self._every = 1

    @contextmanager
    def batched(self, every: int = STATE_FLUSH_EVERY) -> Iterator[HubState]:
        """Write ``state.json`` after every ``every`` saves and at the end, not after each one: it names every
        tracked repo, so rewriting it per model makes ingesting N models cost N^2 (2,000 models rewrite
        a ~300 KB file 2,000 times). A stop in between loses at most the last ``every`` state entries: those
        repos' records are on disk, and their next fetch finds a sha it does not know and records it again."""
        self._deferred, self._every = 0, max(1, every)
        try:
            yield self
        finally:
            self._deferred, self._every = None, 1
            self.flush()

    def flush(self) -> None:
        """Write ``state.json`` (atomically: a stop never leaves half a file)."""
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_text(json.dumps(self.state, indent=1))
        os.replace(tmp, self.path)

    def sha(self, repo: str) -> str | None:
        return (self.state.get(repo) or {}).get("sha")

    def record_path(self, repo: str, sha: str) -> Path:
        """Where a revision is kept: built only from a checked repo id and a checked 40-hex sha, so no answer from
        the Hub can name a file outside ``data/hub/models/`` (both raise ValueError otherwise)."""
        return self.layout.hub_revision(check_repo_id(repo), check_revision(sha))

    def revision_records(self) -> list[Path]:
        """Every kept revision record, in path order."""
        return sorted(self.layout.hub_models.glob("*/*.json"))

    def latest(self, repo: str) -> HubModel | None:
        sha = self.sha(repo)
        path = self.record_path(repo, sha) if sha and REVISION_SHA.match(str(sha)) else None
        return HubModel.model_validate_json(path.read_text()) if path and path.exists() else None

    def save(self, model: HubModel) -> bool:
        """Store a revision; True when it is new (the sha changed), appending to the revision history."""
        previous = self.sha(model.repo)
        path = self.record_path(model.repo, model.sha)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(model.model_dump_json(indent=1))
        self.state[model.repo] = {"sha": model.sha, "fetched_at": model.fetched_at.isoformat()}
        if self._deferred is None or self._deferred + 1 >= self._every:
            self.flush()
            self._deferred = None if self._deferred is None else 0
        else:
            self._deferred += 1
        if previous == model.sha:
            return False
        with open(self.root / "revisions.jsonl", "a") as fh:
            fh.write(json.dumps({"repo": model.repo, "sha": model.sha, "previous_sha": previous,
                                 "last_modified": model.last_modified, "fetched_at": model.fetched_at.isoformat()})
                     + "\n")
        return True

    def revisions(self) -> list[dict[str, Any]]:
        path = self.root / "revisions.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _log_name(repo: str) -> str:
    return "hub:" + repo


def ingest_model(entry: WatchEntry, client: httpx.Client, data_dir: Path, state: HubState,
                 now: datetime | None = None, batch: LandingBatch | None = None) -> tuple[FetchLogEntry, HubModel | None]:
    """Fetch, land and parse one repo; never raises for the repo's own failure. With ``batch``, the payload is
    landed and logged through it (synced with others' at its next flush)."""
    started = now or datetime.now(UTC)
    parts: list[RawPart] = []
    headers = _auth_headers()
    name = _log_name(entry.repo)

    def finish(outcome: Outcome, message: str | None = None, **extra: Any) -> FetchLogEntry:
        raw_path = None
        if parts:
            payload = RawPayload(source="hub__" + entry.repo.replace("/", "__"), fetched_at=started, parts=tuple(parts))
            raw_path = str(batch.land(payload) if batch is not None else land(payload, data_dir))
            extra.setdefault("bytes", payload.size)
            extra.setdefault("sha256", payload.sha256)
        log = FetchLogEntry(source=name, provider="huggingface", started_at=started, finished_at=datetime.now(UTC),
                            outcome=outcome, message=message, raw_path=raw_path, **extra)
        if batch is not None:
            batch.log(log)
        else:
            append_log(log, data_dir)
        return log

    def fetch(url: str, **kw: Any) -> RawPart:
        part = get_part(client, url, headers=headers, **kw)
        parts.append(part)
        return part

    try:
        return _ingest(entry, client, state, started, fetch, finish, parts)
    except Exception as exc:  # noqa: BLE001 - one model's odd answer never stops the others (its payload is landed)
        return finish("parse_error", f"{entry.repo}: unexpected model answer ({type(exc).__name__}: "
                                     f"{str(exc)[:200]})"), None


def _shaped_info(repo: str, info: Any) -> tuple[dict[str, Any] | None, str | None]:
    """Model info with every field sizing reads in the type it is read as (anything else dropped), or why not."""
    if not isinstance(info, dict):
        return None, f"{repo}: model info is not a JSON object"
    sha = info.get("sha")
    if sha is None:
        return None, f"{repo}: field 'sha' missing from model info"
    if not isinstance(sha, str) or not REVISION_SHA.match(sha):
        return None, f"{repo}: field 'sha' is not a 40-hex revision id: {str(sha)[:60]!r}"
    shaped = dict(info)
    siblings = info.get("siblings")
    shaped["siblings"] = [x for x in siblings if isinstance(x, dict) and isinstance(x.get("rfilename"), str)] \
        if isinstance(siblings, list) else []
    for key in ("cardData", "safetensors"):
        shaped[key] = info.get(key) if isinstance(info.get(key), dict) else None
    shaped["tags"] = [t for t in info.get("tags") or [] if isinstance(t, str)] if isinstance(info.get("tags"), list) \
        else []
    for key in ("lastModified", "createdAt", "pipeline_tag"):
        shaped[key] = info.get(key) if isinstance(info.get(key), str) else None
    shaped["gated"] = info.get("gated") if isinstance(info.get("gated"), bool | str) else False  # "auto", "manual"
    return shaped, None


def _ingest(entry: WatchEntry, client: httpx.Client, state: HubState, started: datetime,
            fetch: Any, finish: Any, parts: list[RawPart]) -> tuple[FetchLogEntry, HubModel | None]:  # noqa: ANN401
    try:
        info_part = fetch(f"{HUB}/api/models/{entry.repo}?blobs=true")
        info, problem = _shaped_info(entry.repo, json.loads(info_part.body))
        if info is None:
            return finish("parse_error", problem), None
        sha = info["sha"]
        if state.sha(entry.repo) == sha:
            return finish("unchanged", f"{entry.repo}@{sha[:12]} already ingested"), state.latest(entry.repo)
        siblings = {s.get("rfilename"): s for s in info["siblings"]}
        config_part = fetch(f"{HUB}/{entry.repo}/resolve/{sha}/config.json", max_bytes=CONFIG_MAX_BYTES)
        quant = index = template = None
        if "hf_quant_config.json" in siblings:
            quant = json.loads(fetch(f"{HUB}/{entry.repo}/resolve/{sha}/hf_quant_config.json",
                                     max_bytes=CONFIG_MAX_BYTES).body)
        if "model.safetensors.index.json" in siblings:
            index = json.loads(fetch(f"{HUB}/{entry.repo}/resolve/{sha}/model.safetensors.index.json",
                                     max_bytes=INDEX_MAX_BYTES).body)
        if "tokenizer_config.json" in siblings:
            tok = json.loads(fetch(f"{HUB}/{entry.repo}/resolve/{sha}/tokenizer_config.json",
                                   max_bytes=CONFIG_MAX_BYTES).body)
            template = tok.get("chat_template") if isinstance(tok.get("chat_template"), str) else None
        ggufs: dict[str, dict[str, Any]] = {}
        for repo in entry.gguf_repos:
            listing = json.loads(fetch(f"{HUB}/api/models/{repo}/tree/main?recursive=true").body)
            ggufs.update({k: v for k, v in gguf_files(listing, repo).items() if k not in ggufs})
    except HttpStatusError as exc:
        status = exc.part.status
        parts.append(exc.part)
        outcome: Outcome = "gated" if status in (401, 403) else "missing" if status == 404 else "http_error"
        return finish(outcome, f"{entry.repo}: HTTP {status} for {exc.part.url}", http_status=status), None
    except ResponseTooLarge as exc:
        return finish("too_large", str(exc)), None
    except httpx.TimeoutException as exc:
        return finish("timeout", f"{entry.repo}: {type(exc).__name__}"), None
    except httpx.HTTPError as exc:
        return finish("network_error", f"{entry.repo}: {type(exc).__name__}: {exc}"), None
    except json.JSONDecodeError as exc:
        return finish("parse_error", f"{entry.repo}: {parts[-1].url.rsplit('/', 1)[-1]} is not valid JSON ({exc})"), None
    try:
        config = json.loads(config_part.body)
        if not isinstance(config, dict):
            raise ConfigError(entry.repo, None, "config.json must be a JSON object")
        parse_config(entry.repo, config, quant)  # validates every field sizing needs
    except json.JSONDecodeError as exc:
        return finish("parse_error", f"{entry.repo}: config.json is not valid JSON ({exc})"), None
    except ConfigError as exc:
        return finish("parse_error", str(exc)), None
    headers = read_checkpoint_headers(client, entry.repo, sha, index, list(siblings), config, parts)
    st = info.get("safetensors") or {}
    model = HubModel(
        id=entry.id, repo=entry.repo, sha=sha, last_modified=info.get("lastModified"), created_at=info.get("createdAt"),
        gated=info["gated"], pipeline_tag=info.get("pipeline_tag"), tags=info["tags"],
        license=(info.get("cardData") or {}).get("license"), safetensors_parameters=st.get("parameters"),
        safetensors_total=st.get("total"),
        checkpoint_bytes=(index or {}).get("metadata", {}).get("total_size") or _safetensors_bytes(siblings),
        config=config, hf_quant_config=quant, gguf_files=ggufs or None, checkpoint_headers=headers,
        derived=derive_facts(config, info, template), fetched_at=started,
    )
    new = state.save(model)
    return finish("ok", f"{entry.repo}@{sha[:12]}" + (" (new revision)" if new else "")), model


def _header_prefix(client: httpx.Client, url: str, parts: list[RawPart]) -> bytes:
    """The first 8 + N bytes of a shard: one range request, a second when the header is longer than the first."""
    first = get_part(client, url, headers={**_auth_headers(), "Range": f"bytes=0-{HEADER_FIRST_BYTES - 1}"},
                     max_bytes=HEADER_FIRST_BYTES)
    parts.append(first)
    n = header_length(first.body, url.rsplit("/", 1)[-1])
    if len(first.body) >= 8 + n:
        return first.body[:8 + n]
    if 8 + n > HEADER_MAX_BYTES:
        raise HeaderError(f"{url.rsplit('/', 1)[-1]}: header of {n:,} bytes is above {HEADER_MAX_BYTES:,}")
    rest = get_part(client, url, headers={**_auth_headers(), "Range": f"bytes=0-{8 + n - 1}"}, max_bytes=8 + n)
    parts.append(rest)
    return rest.body[:8 + n]


def read_checkpoint_headers(client: httpx.Client, repo: str, sha: str, index: dict[str, Any] | None,
                            siblings: list[str], config: dict[str, Any],
                            parts: list[RawPart]) -> CheckpointHeaders | None:
    """Each shard's header by HTTP range request (as hf-mem does); the bytes are landed with the revision's
    other parts. A failure is recorded in ``error`` and never fails the model's ingestion."""
    files = shard_files(index, siblings)
    if not files:
        return None
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    layers = text.get("num_hidden_layers") if isinstance(text.get("num_hidden_layers"), int) else None
    tied = bool(text.get("tie_word_embeddings", config.get("tie_word_embeddings", False)))
    shards = []
    try:
        for name in files:
            shards.append(parse_header(_header_prefix(client, f"{HUB}/{repo}/resolve/{sha}/{name}", parts), name))
    except HttpStatusError as exc:
        parts.append(exc.part)
        return CheckpointHeaders(error=f"{repo}: HTTP {exc.part.status} reading the header of {exc.part.url}")
    except (HeaderError, ResponseTooLarge, httpx.HTTPError) as exc:
        return CheckpointHeaders(error=f"{repo}: {type(exc).__name__}: {exc}")
    records = [ShardRecord(file=s.file, header_length=s.header_length, data_bytes=s.data_bytes,
                           file_bytes=s.file_bytes, tensors=len(s.tensors)) for s in shards]
    return CheckpointHeaders(shards=records, summary=summarize(shards, layers, tied))


def _safetensors_bytes(siblings: dict[str, dict[str, Any]]) -> int | None:
    sizes = [s.get("size") for n, s in siblings.items() if str(n).endswith(".safetensors")]
    return sum(sizes) if sizes and all(isinstance(x, int) for x in sizes) else None


#: The Hub listings discovery reads: text-generation models by trending score and by downloads.
DISCOVERY_SORTS = ("trendingScore", "downloads")


def discovery_url(sort: str, limit: int) -> str:
    return f"{HUB}/api/models?pipeline_tag=text-generation&sort={sort}&direction=-1&limit={limit}"


def discover(client: httpx.Client, data_dir: Path, watchlist: Watchlist, limit: int = 50,
             min_downloads: int = 0) -> list[str]:
    """Trending and most-downloaded text-generation repos not on the watchlist, added to
    ``data/hub/discovered.json``; repos below ``min_downloads`` are left out (a listing item without a download
    count passes only when the minimum is 0). What each listing gave is written to ``data/hub/discovery.json``
    (one listing failing never stops the other)."""
    known = {m.repo for m in watchlist.models}
    path = DataDir(data_dir).discovered
    found = json.loads(path.read_text()) if path.exists() else []
    seen = set(found)  # (a list lookup per listed repo was quadratic in the listing's length)
    stats: dict[str, Any] = {"limit": limit, "min_downloads": min_downloads, "listed": 0, "below_min_downloads": 0,
                             "already_tracked": 0, "new": [], "errors": {}}
    for sort in DISCOVERY_SORTS:
        try:
            listing = json.loads(get_part(client, discovery_url(sort, limit), headers=_auth_headers()).body)
            if not isinstance(listing, list):
                raise ValueError("listing is not a JSON array")
        except HttpStatusError as exc:
            stats["errors"][sort] = f"HTTP {exc.part.status}"
            continue
        except (httpx.HTTPError, ResponseTooLarge, ValueError) as exc:
            stats["errors"][sort] = f"{type(exc).__name__}: {exc}"
            continue
        for item in listing[:limit]:
            repo = item.get("id") or item.get("modelId") if isinstance(item, dict) else None
            if not repo:
                continue
            if not valid_repo_id(repo):  # a listing's id reaches file names and URLs: only the Hub's own shape
                stats.setdefault("invalid_ids", []).append(str(repo)[:120])
                continue
            stats["listed"] += 1
            downloads = item.get("downloads")
            if min_downloads and (not isinstance(downloads, int) or downloads < min_downloads):
                stats["below_min_downloads"] += 1
                continue
            if repo in known or repo in seen:
                stats["already_tracked"] += 1
                continue
            found.append(repo)
            seen.add(repo)
            stats["new"].append(repo)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(found, indent=1))
    DataDir(data_dir).discovery.write_text(json.dumps(stats, indent=1))
    return found


def discovery_stats(data_dir: Path) -> dict[str, Any]:
    path = DataDir(data_dir).discovery
    return json.loads(path.read_text()) if path.exists() else {}


def discovered_entries(data_dir: Path) -> list[WatchEntry]:
    path = DataDir(data_dir).discovered
    repos = [r for r in (json.loads(path.read_text()) if path.exists() else []) if valid_repo_id(r)]
    return [WatchEntry(id=r.split("/")[-1].lower(), repo=r, name=r.split("/")[-1], lab=r.split("/")[0],
                       country="unknown") for r in repos]
