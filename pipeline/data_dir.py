"""The data directory's layout, named once: every file and folder a run, the CLI or a look-up reads or writes
under it. Callers ask a :class:`DataDir` for a path instead of joining names themselves, so a folder moves in one
place and no two modules can disagree about where a thing is kept.

::

    <data dir>/
      vramlab.duckdb            the database (``VRAMLAB_DB`` may put it elsewhere)
      watchlist.json            the data directory's own watchlist, once ``vramlab track`` wrote one
      raw/                      every payload as fetched, per source and UTC day, and the fetch log
        fetch_log.jsonl
        <source>/<day>/<stamp>.json, <source>/validators.json, <source>/baseline.json
      hub/                      Hub state and one record per model revision
        state.json, discovered.json, discovery.json, models/<org>__<name>/<sha>.json
      exports/                  published snapshots, ``latest`` (a symlink) and the shared price history parts
        <snapshot id>/, latest, history/
      cache/                    what can be rebuilt: the CLI's offer cache, the Hub look-ups (a data directory
        cli/, hub-lookups/       of their own, laid out as this one)
      parts/                    the partitioned graph's Parquet parts (``VRAMLAB_PARTS_DIR`` may move them)
      .dagster_home/            the Dagster instance of an installed package (a checkout keeps its own)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

#: the symlink naming the newest published snapshot, and the exports folder's part that is never pruned
LATEST = "latest"
HISTORY = "history"
#: a Hub revision: a git commit id, 40 lowercase hex characters (used in file names and URLs: nothing else passes)
REVISION_SHA = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class DataDir:
    """Paths under one data directory (nothing is created or read here: the callers do their own I/O)."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    # ------------------------------------------------------------------------------------------ database
    @property
    def database(self) -> Path:
        return self.root / "vramlab.duckdb"

    @property
    def watchlist(self) -> Path:
        """The data directory's own watchlist (``vramlab track`` writes it from the packaged one on first use)."""
        return self.root / "watchlist.json"

    # ------------------------------------------------------------------------------------------ raw landing
    @property
    def raw(self) -> Path:
        return self.root / "raw"

    @property
    def fetch_log(self) -> Path:
        return self.raw / "fetch_log.jsonl"

    def source(self, source: str) -> Path:
        """One price source's landed payloads (``<day>/<stamp>.json``) and its fetch state."""
        return self.raw / source

    def validators(self, source: str) -> Path:
        """The HTTP validators (ETag, Last-Modified) of a source's last answers."""
        return self.source(source) / "validators.json"

    def drift_baseline(self, source: str) -> Path:
        """The offer counts a source's drift canaries compare a new answer with."""
        return self.source(source) / "baseline.json"

    # ------------------------------------------------------------------------------------------ Hub
    @property
    def hub(self) -> Path:
        return self.root / "hub"

    @property
    def hub_state(self) -> Path:
        """The last seen sha per repo."""
        return self.hub / "state.json"

    @property
    def hub_models(self) -> Path:
        return self.hub / "models"

    def hub_revision(self, repo: str, sha: str) -> Path:
        """One revision's record. ``repo`` and ``sha`` must be checked first (``HubState.record_path`` does):
        the path is built from them as given."""
        return self.hub_models / repo.replace("/", "__") / f"{sha}.json"

    @property
    def discovered(self) -> Path:
        """Repos the Hub's listings added to the watchlist's."""
        return self.hub / "discovered.json"

    @property
    def discovery(self) -> Path:
        """What each Hub listing gave on the last discovery."""
        return self.hub / "discovery.json"

    # ------------------------------------------------------------------------------------------ exports
    @property
    def exports(self) -> Path:
        return self.root / "exports"

    @property
    def latest(self) -> Path:
        return self.exports / LATEST

    @property
    def history(self) -> Path:
        return self.exports / HISTORY

    # ------------------------------------------------------------------------------------------ caches
    @property
    def cache(self) -> Path:
        return self.root / "cache"

    @property
    def cli_cache(self) -> Path:
        return self.cache / "cli"

    @property
    def lookups(self) -> DataDir:
        """The Hub look-ups' own data directory (``vramlab size org/name`` fetches into it, not into the run's)."""
        return DataDir(self.cache / "hub-lookups")

    @property
    def parts(self) -> Path:
        return self.root / "parts"

    @property
    def dagster_home(self) -> Path:
        return self.root / ".dagster_home"

    # ------------------------------------------------------------------------------------------ guards
    @property
    def written_parts(self) -> tuple[Path, ...]:
        """The parts a run writes into (a symlink at one of them, or one level inside, leading out of the data
        directory would have a run write elsewhere without a word)."""
        return (self.raw, self.history, self.hub, self.cache)

    @property
    def written_folders(self) -> tuple[Path, ...]:
        """Folders a run writes into whose existing children it only reads (an old snapshot linked elsewhere is
        left alone by pruning)."""
        return (self.exports,)
