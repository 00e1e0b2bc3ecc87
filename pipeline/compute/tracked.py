"""The models the pipeline sizes: watchlist entries (and discovered repos) with their latest ingested revision."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from pipeline.sources.huggingface import HubModel, HubState, WatchEntry, discovered_entries, load_watchlist
from sizing_core import Architecture, SizingError, parse_config
from sizing_core.registry import load_registered


@dataclass(frozen=True)
class Tracked:
    entry: WatchEntry
    hub: HubModel | None
    arch: Architecture | None
    revision: str | None
    error: str | None  # why it cannot be sized (no revision yet, malformed config)


def _spec_revision(spec_id: str) -> str:
    text = (resources.files("sizing_core") / "data" / "models" / f"{spec_id}.json").read_bytes()
    return "spec:" + hashlib.sha256(text).hexdigest()[:12]


def tracked_models(data_dir: Path) -> list[Tracked]:
    state = HubState(data_dir)
    out = []
    for entry in [*load_watchlist().models, *discovered_entries(data_dir)]:
        if entry.spec:
            out.append(Tracked(entry, None, load_registered(entry.spec)[1], _spec_revision(entry.spec), None))
            continue
        hub = state.latest(entry.repo)
        if hub is None:
            out.append(Tracked(entry, None, None, None, f"{entry.repo}: no ingested Hub revision"))
            continue
        try:
            arch = parse_config(entry.repo, hub.config, hub.hf_quant_config)
        except SizingError as exc:
            out.append(Tracked(entry, hub, None, hub.sha, str(exc)))
            continue
        out.append(Tracked(entry, hub, arch, hub.sha, None))
    return out


def as_json(obj: object) -> str:
    return json.dumps(obj, sort_keys=True, default=str)
