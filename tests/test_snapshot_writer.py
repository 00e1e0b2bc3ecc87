"""A snapshot's JSON files are fsynced before its manifest is written and ``latest`` switches to it (
moved their fsyncs from one per write to one batch in ``SnapshotWriter.finish``), and they are written byte for
byte as ``json.dump(obj, indent=1)`` plus a newline."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pipeline.exports import publish
from pipeline.exports.publish import SnapshotWriter


def test_every_json_file_is_fsynced_before_the_manifest_and_the_switch(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src: str | Path, dst: str | Path) -> None:
        events.append(("replace", str(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(publish.os, "fsync", fsync)
    monkeypatch.setattr(publish.os, "replace", replace)
    writer = SnapshotWriter(tmp_path, "20261201T000000000000Z")
    docs = {f"models/m{i}.json": {"id": f"m{i}", "values": [1.5, None, "x"], "nested": {"k": i}} for i in range(20)}
    for rel, obj in docs.items():
        writer.write_json(rel, obj)
    assert not [e for e in events if e[0] == "fsync"]  # none yet: deferred to finish
    final = writer.finish({"snapshot_id": "20261201T000000000000Z", "generated_at": "now", "schema_version": "1",
                           "mode": "replay", "as_of": "now", "sources": {}, "row_counts": {}, "history": []})
    synced = [Path(p).name for kind, p in events if kind == "fsync"]
    moved = next(i for i, e in enumerate(events) if e == ("replace", str(final)))
    manifest_synced = synced.index("manifest.json")
    for rel in docs:  # every file: fsynced before the manifest's own fsync and before the folder is moved in place
        name = Path(rel).name
        assert name in synced[:manifest_synced]
        assert events.index(("fsync", str(writer.tmp / rel))) < moved
    for rel, obj in docs.items():  # the bytes json.dump(indent=1) wrote before
        assert (final / rel).read_text() == json.dumps(obj, indent=1) + "\n"
    manifest = json.loads((final / "manifest.json").read_text())
    assert set(manifest["files"]) == set(docs)
    assert (tmp_path / "latest").resolve() == final
