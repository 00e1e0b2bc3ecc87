"""Model ingestion glue: the watchlist (plus discovered repos) through the Hub, then sizing of each revision.

Models with a bundled manual spec are sized from the spec and not fetched. Every model either yields a sizing
report or a recorded, specific reason; one failure never stops the others.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.settings import variable
from pipeline.sources.http import SourceClient, make_client
from pipeline.sources.huggingface import (
    HubModel,
    HubState,
    WatchEntry,
    Watchlist,
    discover,
    discovered_entries,
    discovery_stats,
    ingest_model,
    load_watchlist,
)
from pipeline.sources.landing import FetchLogEntry, LandingBatch
from pipeline.sources.replay import REPLAY_ROOT, ReplayTransport
from sizing_core import SizingError, SizingReport, parse_config, size_model
from sizing_core.parameters import CheckpointFacts, count_parameters
from sizing_core.registry import load_registered


def hub_replay_manifest() -> Path:
    """The Hub recordings replayed offline: ``VRAMLAB_HUB_REPLAY`` (a replay manifest, e.g. the whole-Hub listing
    ``benchmarks/hub_world.py`` writes), else the bundled ``pipeline/replay/hub/manifest.json``."""
    path = variable("VRAMLAB_HUB_REPLAY").text()
    if not path:
        return REPLAY_ROOT / "hub" / "manifest.json"
    if not Path(path).is_file():
        raise ValueError(f"VRAMLAB_HUB_REPLAY: no replay manifest at {path}")
    return Path(path)


def hub_client(replay: bool) -> SourceClient:
    if replay:
        return make_client(ReplayTransport(hub_replay_manifest()), sleep=lambda _s: None, min_interval=0.0)
    return make_client()


def discovery_enabled() -> bool:
    return variable("VRAMLAB_DISCOVERY").on()


def discovery_limits() -> tuple[int, int]:
    """(models per listing, minimum downloads): ``VRAMLAB_DISCOVERY_LIMIT`` (50),
    ``VRAMLAB_DISCOVERY_MIN_DOWNLOADS`` (1000)."""
    return max(1, variable("VRAMLAB_DISCOVERY_LIMIT").whole()), variable("VRAMLAB_DISCOVERY_MIN_DOWNLOADS").whole()


def ingest_hub(data_dir: Path, *, replay: bool, discovery: bool = False, client: SourceClient | None = None,
               watchlist: Watchlist | None = None) -> list[tuple[WatchEntry, FetchLogEntry | None, HubModel | None]]:
    watchlist = watchlist or load_watchlist(data_dir=data_dir)
    client = client or hub_client(replay)
    state = HubState(data_dir)
    entries = list(watchlist.models)
    if discovery:
        limit, min_downloads = discovery_limits()
        discover(client, data_dir, watchlist, limit=limit, min_downloads=min_downloads)
        entries += discovered_entries(data_dir)
    out = []
    # state.json once per 100 new records and the landed payloads synced 100 at a time, not per model
    with state.batched(), LandingBatch(data_dir) as batch:
        for entry in entries:
            if entry.spec:
                out.append((entry, None, None))
                continue
            log, model = ingest_model(entry, client, data_dir, state, batch=batch)
            out.append((entry, log, model))
    return out


def checkpoint_facts(model: HubModel | None) -> CheckpointFacts | None:
    """What the checkpoint itself says about one revision: the shard headers (exact parameters and bytes) when
    they were read, else the Hub's safetensors counts / index ``total_size``."""
    if model is None:
        return None
    summary = model.checkpoint_headers.summary if model.checkpoint_headers else None
    if summary is None and not (model.safetensors_total or model.checkpoint_bytes):
        return None
    return CheckpointFacts(
        parameters_by_dtype=model.safetensors_parameters, parameter_total=model.safetensors_total,
        total_bytes=summary.file_bytes if summary else model.checkpoint_bytes,
        header_parameters=summary.parameters if summary else None,
        header_bytes_by_dtype=summary.bytes_by_dtype if summary else None,
        source=(f"safetensors headers ({summary.files} shards) " if summary else "hub ")
        + f"{model.repo}@{model.sha[:12]}")


def size_entry(entry: WatchEntry, model: HubModel | None) -> SizingReport:
    """Size a watchlist model from its Hub revision (or its manual spec). Raises SizingError with the reason."""
    if entry.spec:
        return size_model(load_registered(entry.spec)[1])
    if model is None:
        raise SizingError(f"{entry.repo}: no ingested revision to size")
    arch = parse_config(entry.repo, model.config, model.hf_quant_config)
    return size_model(arch, checkpoint=checkpoint_facts(model))


def sizing_outcome(entry: WatchEntry, log: FetchLogEntry | None,
                   model: HubModel | None) -> tuple[str, bool, str | None]:
    """(how the architecture was read: ``family`` / ``generic``, or ``failed``; whether the checkpoint headers
    were read, making bytes and parameters exact; the note or the reason it failed). Reads what ``size_entry``
    reads (the architecture and the parameter counts) without the weights of every format, which say nothing
    of how the model was read (sizing every discovered model in full takes half of ``raw_hub__models``)."""
    if model is None:
        return "failed", False, (f"fetch {log.outcome}" if log else "no revision")
    try:
        if entry.spec:
            arch, facts = load_registered(entry.spec)[1], None
        else:
            arch, facts = parse_config(entry.repo, model.config, model.hf_quant_config), checkpoint_facts(model)
        counts = count_parameters(arch, facts)
    except SizingError as exc:
        return "failed", False, str(exc)
    exact = bool(model.checkpoint_headers and model.checkpoint_headers.summary)
    why = [*arch.notes, *([counts.used_reason] if exact else [])]
    return arch.architecture_source, exact, "; ".join(n for n in why if n) or None


def discovery_summary(results: list[tuple[WatchEntry, FetchLogEntry | None, HubModel | None]],
                      data_dir: Path) -> dict[str, Any]:
    """What discovery found and how each discovered model sized: the discovery metadata of ``raw_hub__models``.
    ``sized``: by family rule / generic rule, and how many of those exactly from checkpoint headers;
    ``failed``: count per reason."""
    tracked = {m.repo for m in load_watchlist(data_dir=data_dir).models}
    rows: list[dict[str, Any]] = []
    sized = {"family": 0, "generic": 0, "exact_from_headers": 0}
    failed: dict[str, int] = {}
    for entry, log, model in results:
        if entry.repo in tracked:
            continue
        how, exact, why = sizing_outcome(entry, log, model)
        if how == "failed":
            key = why if (why or "").startswith("fetch ") else (why or "").split(": ", 1)[-1][:80]
            failed[key] = failed.get(key, 0) + 1
        else:
            sized[how] = sized.get(how, 0) + 1
            sized["exact_from_headers"] += exact
        rows.append({"repo": entry.repo, "sized": how, "exact": exact, "why": why})
    return {**discovery_stats(data_dir), "sized": sized, "failed": failed, "models": rows}
