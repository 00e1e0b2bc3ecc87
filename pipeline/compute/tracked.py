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


#: architectures parsed by the last :func:`tracked_models` call, keyed by what they were parsed from (see there)
_PARSED: dict[tuple[str, ...], Architecture] = {}


def tracked_models(data_dir: Path) -> list[Tracked]:
    """Every watchlist (and discovered) entry with its latest ingested revision and parsed architecture.

    Within one process the same entry parsed from the same inputs gets the same :class:`Architecture` object back
    : ``vramlab run`` executes its steps in one process (sizing, setups, exports each call this), and
    ``sizing_core`` memoises per-model work by object identity (tensor bits per format, per-layer weight loads,
    decode-step bytes), so the exports step re-uses what the setups step computed for the same model instead of
    recomputing it for a fresh copy. The key is the entry's own id (two entries never share an object, whatever
    their architecture) and the exact inputs of the parse (revision, config and quantization config text); only
    the last call's objects are kept."""
    global _PARSED
    state = HubState(data_dir)
    out = []
    parsed: dict[tuple[str, ...], Architecture] = {}
    for entry in [*load_watchlist(data_dir=data_dir).models, *discovered_entries(data_dir)]:
        if entry.spec:
            revision = _spec_revision(entry.spec)
            key = (entry.id, "spec", entry.spec, revision)
            arch = _PARSED.get(key) or load_registered(entry.spec)[1]
            parsed[key] = arch
            out.append(Tracked(entry, None, arch, revision, None))
            continue
        hub = state.latest(entry.repo)
        if hub is None:
            out.append(Tracked(entry, None, None, None, f"{entry.repo}: no ingested Hub revision"))
            continue
        key = (entry.id, "hub", entry.repo, hub.sha, as_json(hub.config), as_json(hub.hf_quant_config))
        try:
            arch = _PARSED.get(key) or parse_config(entry.repo, hub.config, hub.hf_quant_config)
        except SizingError as exc:
            out.append(Tracked(entry, hub, None, hub.sha, str(exc)))
            continue
        parsed[key] = arch
        out.append(Tracked(entry, hub, arch, hub.sha, None))
    _PARSED = parsed
    return out


def as_json(obj: object) -> str:
    return json.dumps(obj, sort_keys=True, default=str)
