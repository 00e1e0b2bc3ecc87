"""``vramlab track``: the data directory's own watchlist, a copy of the packaged one with the models a user adds.

The copy (``<data dir>/watchlist.json``) is what every reader of that data directory uses from then on
(``pipeline.sources.huggingface.load_watchlist(data_dir=...)``: ingestion, sizing, exports, ``vramlab models``);
the packaged ``pipeline/data/watchlist.json`` is never written.
"""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipeline.cli.errors import CliError
from pipeline.cli.resolve import WATCHLIST, norm, resolve_model, watchlist_entries
from pipeline.data_dir import DataDir


def track_repo(repo: str, data_dir: Path, *, model_id: str | None = None,
               name: str | None = None) -> tuple[dict[str, Any], bool, Path]:
    """Add ``repo`` (looked up first: it must exist and be sizable); (entry, added, watchlist path)."""
    from pipeline.ingest.lookup import is_repo_id

    if not is_repo_id(repo):
        raise CliError(f"{repo!r} is not a Hub repo id; `vramlab track` takes org/name (Qwen/Qwen3-235B-A22B)")
    entries = list(watchlist_entries(data_dir))
    known = next((e for e in entries if norm(e["repo"]) == norm(repo)), None)
    path = DataDir(data_dir).watchlist
    if known is not None:
        return known, False, path if path.is_file() else WATCHLIST
    ref = resolve_model(repo, data_dir)  # the look-up: one line when the repo cannot be found or sized
    canonical = ref.repo or repo
    org, repo_name = canonical.split("/", 1)
    new_id = model_id or repo_name.lower()
    if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", new_id):
        raise CliError(f"--id {new_id!r}: use lower-case letters, digits, '.', '_' and '-'")
    taken = next((e for e in entries if norm(e["id"]) == norm(new_id)), None)
    if taken is not None:
        raise CliError(f"id {new_id!r} is taken by {taken['repo']}; choose another with --id")
    hub = ref.hub or {}
    created = hub.get("created_at")
    entry = {"id": new_id, "repo": canonical, "name": name or repo_name, "lab": org, "country": "unknown",
             "released": str(created)[:10] if created else None, "base_model": None, "gguf_repos": [], "spec": None}
    source = path if path.is_file() else WATCHLIST
    document = json.loads(source.read_text())
    document["models"].append(entry)
    document["updated"] = datetime.now(UTC).date().isoformat()
    data_dir.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(document, indent=1) + "\n")
    os.replace(tmp, path)  # atomic: a run reading the watchlist sees the old file or the new one
    return entry, True, path
