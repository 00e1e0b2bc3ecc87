"""Atomic publishing of snapshots: write into a hidden temporary folder, fsync, rename to ``exports/<id>/``, and
only then switch the ``exports/latest`` link. A crash at any point before the switch leaves ``latest`` on the
previous complete snapshot; old snapshots are pruned only after ``latest`` points elsewhere."""

from __future__ import annotations

import hashlib
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec
from pydantic import BaseModel

from pipeline.data_dir import HISTORY, LATEST
from pipeline.exports.schema import SCHEMA_VERSION, Manifest
from pipeline.sources.landing import fsync_path


def snapshot_id(when: datetime) -> str:
    return when.strftime("%Y%m%dT%H%M%S%fZ")


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


#: threads that hash and fsync a snapshot's files in :meth:`SnapshotWriter.finish` (both release the GIL: hashlib on
#: large buffers, os.fsync while the kernel writes)
IO_THREADS = 4


class SnapshotWriter:
    """Files of one snapshot, written into a hidden temporary folder. JSON files are written whole in one call and
    fsynced together in :meth:`finish`, before the manifest and the switch (one fsync after another costs
    ~10 ms per model file); durability at the switch is the same as fsyncing each file as it is written."""

    def __init__(self, exports_dir: Path, snap_id: str):
        self.exports_dir, self.snapshot_id = exports_dir, snap_id
        self.unsynced: set[Path] = set()
        self.tmp = exports_dir / f".tmp-{snap_id}"
        if self.tmp.exists():
            shutil.rmtree(self.tmp)
        self.tmp.mkdir(parents=True)

    def path(self, rel: str) -> Path:
        p = self.tmp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def write_json(self, rel: str, obj: Any) -> Path:
        """Write ``obj`` as indented UTF-8 JSON (fsynced by :meth:`finish`), encoded and indented by msgspec: the
        standard library's encoder runs in Python whenever it indents (~10x slower: a quarter of a price-only
        publish at 2,000 models). A value JSON has no type for is written as its ``str``."""
        p = self.path(rel)
        p.write_bytes(msgspec.json.format(msgspec.json.encode(obj, enc_hook=str), indent=1) + b"\n")
        self.unsynced.add(p)
        return p

    def _hash_and_sync(self, path: Path) -> str:
        digest = sha256_file(path)
        if path in self.unsynced:
            with open(path, "rb") as fh:
                os.fsync(fh.fileno())
        return digest

    def finish(self, manifest: dict[str, Any]) -> Path:
        """Hash (and fsync what :meth:`write_json` wrote) every file, write the manifest, move the folder into
        place and switch ``latest``."""
        paths = [p for p in sorted(self.tmp.rglob("*")) if p.is_file()]
        with ThreadPoolExecutor(IO_THREADS) as pool:
            digests = list(pool.map(self._hash_and_sync, paths))
        files = {str(p.relative_to(self.tmp)): d for p, d in zip(paths, digests, strict=True)}
        Manifest.model_validate(manifest | {"files": files})
        self.write_json("manifest.json", manifest | {"files": files})
        self._hash_and_sync(self.tmp / "manifest.json")
        for folder in [self.tmp, *[p for p in self.tmp.rglob("*") if p.is_dir()]]:
            fsync_path(folder)
        final = self.exports_dir / self.snapshot_id
        os.replace(self.tmp, final)
        fsync_path(self.exports_dir)
        switch_latest(self.exports_dir, self.snapshot_id)
        return final

    def abandon(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)


def switch_latest(exports_dir: Path, snap_id: str) -> None:
    link = exports_dir / LATEST
    tmp = exports_dir / f".latest-{snap_id}"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(snap_id, target_is_directory=True)
    os.replace(tmp, link)  # atomic: readers see the old or the new snapshot, never neither
    fsync_path(exports_dir)


def latest(exports_dir: Path) -> Path | None:
    link = exports_dir / LATEST
    return link.resolve() if link.exists() else None


def prune(exports_dir: Path, keep: int, skipped: dict[str, str] | None = None) -> list[str]:
    """Delete all but the newest ``keep`` snapshots (never the one ``latest`` points to) and stale temp folders.
    Runs after ``latest`` has switched, so it never fails the publish: an entry it may not remove (a symlink, which
    points at data that is not ours to delete; a folder the file system refuses) is left in place and named in
    ``skipped`` (name -> why)."""
    skipped = {} if skipped is None else skipped
    current = latest(exports_dir)
    snaps = sorted(p for p in exports_dir.iterdir() if (p.is_dir() or p.is_symlink()) and not p.name.startswith(".")
                   and p.name not in (LATEST, HISTORY))  # history/: shared price partitions, never pruned
    removed = []
    for old in snaps[:-keep] if keep > 0 else snaps:
        if old.is_symlink():
            skipped[old.name] = f"a symlink (to {os.readlink(old)}): not removed"
            continue
        if current is not None and old.resolve() == current:
            continue
        try:
            shutil.rmtree(old)
        except OSError as exc:
            skipped[old.name] = f"could not be removed: {exc.strerror or exc}"
            continue
        removed.append(old.name)
    for tmp in exports_dir.glob(".tmp-*"):
        if tmp.is_symlink():
            skipped[tmp.name] = f"a symlink (to {os.readlink(tmp)}): not removed"
            continue
        shutil.rmtree(tmp, ignore_errors=True)
    return removed


class _FileListing(BaseModel):
    """What every manifest the project has published carries (schema versions 1 to today's): its files' sha256."""
    schema_version: str | None = None
    files: dict[str, str]


def _listing(text: str) -> _FileListing:
    """The manifest's file listing: a manifest of today's schema version must match today's contract whole; one of
    an earlier version (written by an earlier release, e.g. without ``history``) only needs its listing."""
    listing = _FileListing.model_validate_json(text)
    if listing.schema_version == SCHEMA_VERSION:
        Manifest.model_validate_json(text)
    return listing


def check_snapshot(path: Path) -> list[str]:
    """Problems with a published snapshot: unreadable manifest, missing, changed or unlisted files."""
    manifest_path = path / "manifest.json"
    try:
        manifest = _listing(manifest_path.read_text())
    except (OSError, ValueError) as exc:
        return [f"manifest.json: {exc}"]
    problems = []
    on_disk = {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file()} - {"manifest.json"}
    for rel, digest in manifest.files.items():
        p = path / rel
        if not p.is_file():
            problems.append(f"{rel}: listed in the manifest but missing")
        elif sha256_file(p) != digest:
            problems.append(f"{rel}: sha256 differs from the manifest")
    problems += [f"{rel}: not listed in the manifest" for rel in sorted(on_disk - set(manifest.files))]
    return problems
