"""Run settings from the environment: where data lives, live or replay, and the clock staleness is judged by.

- ``VRAMLAB_DATA_DIR``: data directory (default ``data/`` at the repository root); also the root a run's own
  config may not leave (:func:`inside_data_root`).
- ``VRAMLAB_DB``: DuckDB file (default ``<data dir>/vramlab.duckdb``).
- ``VRAMLAB_LIVE=1``: fetch from the real sources; otherwise the bundled recordings are replayed.
- ``VRAMLAB_WORKERS``: processes the CPU-bound steps fork for their work (the cheapest setups, the model files'
  price-independent part, the report's model pages; ``pipeline/compute/workers.py``): default the machine's
  cores, at most 2. ``1`` keeps the work in the step's own process.
- In replay mode every recorded observation carries its recording's capture time (``captured_at`` in the replay
  manifest; ``REPLAY_SNAPSHOT_AT``, the reference freeze, where no capture date exists), and staleness is judged as
  of ``REPLAY_SNAPSHOT_AT``: a bundled recording keeps the date it was observed and never becomes fresh by being
  loaded again. A replay series step (``replay_step``, see ``pipeline/sources/replay.py``) is judged as of its own
  time.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
REPLAY_SNAPSHOT_AT = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)  # when shared/reference was frozen for replay


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    db_path: Path
    replay: bool
    replay_step: str = ""  # a replay series step id; "" = the current recordings
    step_as_of: datetime | None = None  # that step's time (pipeline/sources/replay.py::series_step), set with it
    workers: int = 1  # processes the CPU-bound steps fork (pipeline/compute/workers.py)

    def as_of(self) -> datetime:
        if not self.replay:
            return datetime.now(UTC)
        if self.replay_step:
            if self.step_as_of is None:
                raise ValueError(f"replay step {self.replay_step!r} given without its time (step_as_of)")
            return self.step_as_of
        return REPLAY_SNAPSHOT_AT


def settings() -> Settings:
    data_dir = Path(os.environ.get("VRAMLAB_DATA_DIR") or REPO_ROOT / "data")
    db = Path(os.environ.get("VRAMLAB_DB") or data_dir / "vramlab.duckdb")
    live = os.environ.get("VRAMLAB_LIVE", "").lower() in ("1", "true", "yes")
    workers = os.environ.get("VRAMLAB_WORKERS", "").strip()
    if workers and not (workers.isdigit() and int(workers) > 0):
        raise ValueError(f"VRAMLAB_WORKERS must be a positive whole number, not {workers!r}")
    return Settings(data_dir=data_dir, db_path=db, replay=not live,
                    workers=int(workers) if workers else min(2, os.cpu_count() or 1))


#: the data directory's parts a run writes into; a symlink at one of these (or one level inside) that leads out of
#: the data directory would have a run write elsewhere without a word. ``exports/`` itself is written (a new
#: snapshot folder, ``latest``) but its published snapshots are not: an old snapshot linked elsewhere is only read,
#: and pruning leaves it alone and says so.
WRITTEN_PARTS = ("raw", "exports/history", "hub", "cache")
WRITTEN_FOLDERS = ("exports",)


class ForeignLink(Exception):
    """A part of the data directory is a symlink leading outside it."""


def foreign_links(data_dir: Path) -> dict[str, str]:
    """Symlinks among the data directory's written parts (and their direct children) that resolve outside it,
    as ``{relative path: where it leads}``."""
    root = data_dir.resolve()
    found: dict[str, str] = {}

    def judge(path: Path) -> None:
        if path.is_symlink():
            target = path.resolve()
            if not target.is_relative_to(root):
                found[path.relative_to(data_dir).as_posix()] = str(target)

    for part in WRITTEN_FOLDERS:
        judge(data_dir / part)
    for part in WRITTEN_PARTS:
        path = data_dir / part
        judge(path)
        if path.is_dir() and not path.is_symlink():
            for child in path.iterdir():
                judge(child)
    return found


def check_data_dir(data_dir: Path) -> None:
    """Refuse to run on a data directory whose parts lead elsewhere through symlinks, naming each;
    ``VRAMLAB_ALLOW_FOREIGN_LINKS=1`` says the links are meant (a bigger disk mounted for ``raw/``)."""
    if os.environ.get("VRAMLAB_ALLOW_FOREIGN_LINKS", "").lower() in ("1", "true", "yes"):
        return
    links = foreign_links(data_dir)
    if links:
        named = ", ".join(f"{k} -> {v}" for k, v in sorted(links.items()))
        raise ForeignLink(f"the data directory {data_dir} has parts that are symlinks leading outside it ({named}): "
                          "a run would write there; remove the links, point VRAMLAB_DATA_DIR at the real place, or "
                          "set VRAMLAB_ALLOW_FOREIGN_LINKS=1 if they are meant")


class OutsideDataRoot(ValueError):
    """A path given in a run's config that resolves outside the data root (:func:`inside_data_root`)."""


def inside_data_root(where: str, value: str | Path, root: Settings | None = None) -> Path:
    """``value`` resolved (symlinks followed), if it lies inside the data root; else :class:`OutsideDataRoot`.

    The data root is this process's data directory (``VRAMLAB_DATA_DIR``, else ``data/``); the configured
    DuckDB file (``VRAMLAB_DB``) is allowed too, wherever it lives. It bounds what a run launched with its own
    run config (the Dagster UI's launchpad, GraphQL) may point at: a folder of the config's choosing would be
    written to, and its files loaded into the service's database. ``where`` names the config key."""
    s = root or settings()
    base = s.data_dir.resolve()
    resolved = Path(value).expanduser().resolve()
    if resolved == s.db_path.resolve() or resolved.is_relative_to(base):
        return resolved
    shown = f"{value!s}" + (f" (resolves to {resolved})" if str(resolved) != str(value) else "")
    raise OutsideDataRoot(f"run config {where} = {shown} is outside the data root {base} (VRAMLAB_DATA_DIR where "
                          "the service runs): a run may only use folders inside it; to move the data, start the "
                          "service with another VRAMLAB_DATA_DIR")
