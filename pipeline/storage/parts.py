"""Parquet parts: where partitioned steps write their rows, many writers at once.

A part is one Parquet file per (kind, partition, run): ``<root>/<kind>/<partition>/<written_ns>-<run>.parquet``, its
rows plus a JSON header in the file's key-value metadata (what the rows were computed from: the fetch-log entry,
the model's revision, the offers they were priced on). Writers never share a file, so any number of step
processes (on one host or, with ``root`` on shared storage, on several) write side by side without a lock; the
DuckDB file keeps its single writer, the consolidation step, which reads the newest part of each partition.

Atomic: a part is written to a hidden temporary file in its own folder, flushed to disk and renamed into place
(``os.replace`` is atomic within a file system), so a step killed or failing midway leaves at most a ``.tmp-*``
file that readers never list, and a retried or concurrent step adds a newer part instead of changing one.
Consolidation is idempotent: it reads the newest complete part per partition, whatever ran before.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.data_dir import DataDir
from pipeline.settings import variable

#: where a part's header lives in the Parquet file's key-value metadata
META_KEY = b"vramlab.part"
SUFFIX = ".parquet"
TMP_PREFIX = ".tmp-"


def parts_root(data_dir: Path) -> Path:
    """``$VRAMLAB_PARTS_DIR``, else ``<data_dir>/parts``: on storage every worker and the consolidator share."""
    override = variable("VRAMLAB_PARTS_DIR").text()
    return Path(override) if override else DataDir(Path(data_dir)).parts


@dataclass(frozen=True)
class Part:
    """One complete part on disk: its partition, when it was written (ns since the epoch), its run and header."""

    kind: str
    partition: str
    path: Path
    written_ns: int
    run_id: str

    def meta(self) -> dict[str, Any]:
        raw = pq.read_schema(self.path).metadata or {}
        return json.loads(raw.get(META_KEY, b"{}"))

    def frame(self) -> pl.DataFrame:
        return pl.read_parquet(self.path)


def partition_dir(root: Path, kind: str, partition: str) -> Path:
    # model ids and source names are path-safe today; quoting keeps any future key (a "/" in a repo id) one folder
    return root / kind / quote(partition, safe="")


def write_part(root: Path, kind: str, partition: str, run_id: str, frame: pl.DataFrame | pa.Table,
               meta: dict[str, Any]) -> Part:
    """Write one part atomically (temporary file, fsync, rename, fsync of the folder) and return it."""
    folder = partition_dir(root, kind, partition)
    folder.mkdir(parents=True, exist_ok=True)
    table = frame.to_arrow() if isinstance(frame, pl.DataFrame) else frame
    table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                           META_KEY: json.dumps(meta, sort_keys=True, default=str).encode()})
    written = time.time_ns()
    final = folder / f"{written:020d}-{quote(run_id, safe='')}{SUFFIX}"
    tmp = folder / f"{TMP_PREFIX}{uuid.uuid4().hex}{SUFFIX}"
    try:
        with open(tmp, "wb") as fh:
            pq.write_table(table, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(folder)
    return Part(kind, partition, final, written, run_id)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _parse(kind: str, partition: str, path: Path) -> Part | None:
    if path.name.startswith(TMP_PREFIX) or path.suffix != SUFFIX:
        return None
    stamp, _, run = path.stem.partition("-")
    if not stamp.isdigit() or not run:
        return None
    return Part(kind, partition, path, int(stamp), unquote(run))


def parts_of(root: Path, kind: str, partition: str) -> list[Part]:
    """Every complete part of one partition, oldest first (temporary files of unfinished writes are not parts)."""
    folder = partition_dir(root, kind, partition)
    if not folder.is_dir():
        return []
    found = [p for p in (_parse(kind, partition, f) for f in folder.iterdir()) if p is not None]
    return sorted(found, key=lambda p: (p.written_ns, p.path.name))


def latest_parts(root: Path, kind: str) -> dict[str, Part]:
    """The newest complete part of each partition of ``kind``."""
    base = root / kind
    if not base.is_dir():
        return {}
    out = {}
    for folder in sorted(base.iterdir()):
        if folder.is_dir():
            found = parts_of(root, kind, unquote(folder.name))
            if found:
                out[found[-1].partition] = found[-1]
    return out


def latest_part(root: Path, kind: str, partition: str) -> Part | None:
    found = parts_of(root, kind, partition)
    return found[-1] if found else None


def prune(root: Path, kind: str, keep: int = 1, tmp_older_than: float = 3600.0) -> int:
    """Delete all but the newest ``keep`` parts of every partition of ``kind`` and temporary files older than
    ``tmp_older_than`` seconds (left by killed writers; younger ones may belong to a writer still running).
    Called by the consolidating step after it committed: files removed."""
    base = root / kind
    if not base.is_dir():
        return 0
    removed = 0
    now = time.time()
    for folder in base.iterdir():
        if not folder.is_dir():
            continue
        for path in folder.iterdir():
            if path.name.startswith(TMP_PREFIX) and now - path.stat().st_mtime > tmp_older_than:
                path.unlink(missing_ok=True)
                removed += 1
        for part in parts_of(root, kind, unquote(folder.name))[:-keep or None]:
            part.path.unlink(missing_ok=True)
            removed += 1
    return removed
