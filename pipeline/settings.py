"""Run settings from the environment: where data lives, live or replay, and the clock staleness is judged by.

- ``VRAMLAB_DATA_DIR``: data directory (default ``data/`` at the repository root).
- ``VRAMLAB_DB``: DuckDB file (default ``<data dir>/vramlab.duckdb``).
- ``VRAMLAB_LIVE=1``: fetch from the real sources; otherwise the bundled recordings are replayed.
- In replay mode every recorded observation carries the snapshot's time (``REPLAY_SNAPSHOT_AT``), and staleness
  is judged as of that time: a bundled snapshot keeps the date it was observed and never becomes fresh by being
  loaded again, while the pipeline still has current-looking data to publish offline.
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

    def as_of(self) -> datetime:
        return REPLAY_SNAPSHOT_AT if self.replay else datetime.now(UTC)


def settings() -> Settings:
    data_dir = Path(os.environ.get("VRAMLAB_DATA_DIR") or REPO_ROOT / "data")
    db = Path(os.environ.get("VRAMLAB_DB") or data_dir / "vramlab.duckdb")
    live = os.environ.get("VRAMLAB_LIVE", "").lower() in ("1", "true", "yes")
    return Settings(data_dir=data_dir, db_path=db, replay=not live)
