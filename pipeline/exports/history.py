"""Price history that grows instead of being copied: ``exports/history/price_observations/date=YYYY-MM-DD/`` holds
immutable part files, one per snapshot that found new observations for that UTC day. A part is never rewritten;
the union of a day's parts is every observation of that day exactly once (an observation, keyed by offer_key and
observed_at as price_observations is since migration 006, already in a part is never written again). Each snapshot hard-links the parts into its own ``price_observations/`` folder (no copy: the
same inode) and lists them with their sha256 in ``manifest.json`` (``history``). Deleting an old snapshot only
removes its links.

The day is the UTC date of ``observed_at``, computed in SQL with ``AT TIME ZONE 'UTC'`` on a UTC cursor
(``pipeline/storage/published.py``), so a 03:00Z observation lands on its UTC day under any session time zone.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import duckdb

from pipeline.exports.parquet import write_parquet
from pipeline.exports.publish import sha256_file
from pipeline.exports.schema import HistoryPart
from pipeline.exports.tables import PriceObservations, select_sql
from pipeline.storage import published, snapshot_files

HISTORY_DIR = "history/price_observations"


def append_history(cur: duckdb.DuckDBPyConnection, exports_dir: Path, snap: str,
                   run: dict[str, str] | None = None) -> list[HistoryPart]:
    """Write the observations not yet in any part (one new part per UTC day that has some) and return every part
    of the days the database holds, oldest day first. ``run``: mode and as_of of the run writing new parts."""
    root = exports_dir / HISTORY_DIR
    days = published.observation_days(cur)
    parts: list[HistoryPart] = []
    for day in days:
        folder = root / f"date={day.isoformat()}"
        existing = [str(e) for e in sorted(folder.glob("part-*.parquet"))]
        if published.unexported_count(cur, day, existing):
            query, params = published.unexported_query(select_sql(PriceObservations), day, existing)
            write_parquet(cur, query, PriceObservations, folder / f"part-{snap}.parquet", params, run=run)
        for part in sorted(folder.glob("part-*.parquet")):
            rows = snapshot_files.row_count(cur, part)
            parts.append(HistoryPart(path=str(part.relative_to(exports_dir)), date=day.isoformat(), rows=rows,
                                     sha256=sha256_file(part)))
    return parts


def link_into(snapshot_dir: Path, exports_dir: Path, parts: list[HistoryPart]) -> None:
    """Hard-link every part into the snapshot as ``price_observations/date=.../part-*.parquet`` (copy only when
    the file system refuses links)."""
    for part in parts:
        source = exports_dir / part.path
        target = snapshot_dir / "price_observations" / source.parent.name / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(source, target)
        except OSError:
            shutil.copy2(source, target)
