"""Every published file of the replay run is what it was: a digest of each file's content, with what names the run
itself (its snapshot id and time, the code version, the files' own checksums) taken out, equals the one recorded in
``tests/snapshots/published_replay.json``. A refactor that changes a published byte fails here, named by file.

When a change to the published output is meant (an issue asks for it), regenerate the record with
``VRAMLAB_UPDATE_SNAPSHOT=1 python -m pytest tests/test_published_unchanged.py`` and say why in CHANGELOG.md.
Floats are compared to 9 significant digits: the order DuckDB's threads add in may move the last bits.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq

RECORD = Path(__file__).resolve().parent / "snapshots" / "published_replay.json"
#: keys whose values name the run, not its content
RUN_KEYS = {"updated", "generated_at", "code_version", "sha256"}
#: Parquet columns holding the run's own time
RUN_COLUMNS = ("snapshot_id", "computed_at", "updated_at")
#: a snapshot id (the folder's name, and a Parquet part's name, which is the id of the snapshot that first wrote it)
SNAPSHOT_ID = re.compile(r"\d{8}T\d{6,12}Z")
GENERATED = re.compile(r"generated [A-Z][a-z]{2} \d{1,2}, \d{4}, \d{1,2}:\d{2}:\d{2}\s[AP]M UTC")


def _plain(value: Any) -> Any:  # noqa: ANN401 - any JSON value
    if isinstance(value, dict):
        return {SNAPSHOT_ID.sub("<snapshot>", k): "<run>" if k in RUN_KEYS else
                sorted(_plain(list(v))) if k == "files" else _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return SNAPSHOT_ID.sub("<snapshot>", value)
    if isinstance(value, float):
        return float(f"{value:.9g}")
    return value


def _parquet_text(path: Path) -> str:
    frame = pl.read_parquet(path)
    frame = frame.drop([c for c in RUN_COLUMNS if c in frame.columns])
    floats = [c for c, t in frame.schema.items() if t in (pl.Float32, pl.Float64)]
    frame = frame.with_columns(pl.col(c).round_sig_figs(9) for c in floats)
    nested = [c for c, t in frame.schema.items() if isinstance(t, (pl.List, pl.Struct, pl.Array))]
    frame = frame.with_columns(pl.col(c).map_elements(lambda v: json.dumps(v, default=str, sort_keys=True),
                                                      return_dtype=pl.String) for c in nested)
    meta = {k.decode(): v.decode() for k, v in (pq.read_metadata(path).metadata or {}).items()
            if k != b"ARROW:schema"}
    return json.dumps(meta, sort_keys=True) + "\n" + frame.write_csv()


def digest(snapshot: Path) -> dict[str, str]:
    """{path inside the snapshot: sha256 of its content without the run's own names}."""
    out = {}
    for path in sorted(p for p in snapshot.rglob("*") if p.is_file()):
        name = SNAPSHOT_ID.sub("<snapshot>", path.relative_to(snapshot).as_posix())
        if path.suffix == ".parquet":
            text = _parquet_text(path)
        elif path.suffix == ".json":
            text = json.dumps(_plain(json.loads(path.read_text())), sort_keys=True)
        else:
            text = GENERATED.sub("generated <run>", SNAPSHOT_ID.sub("<snapshot>", path.read_text(errors="replace")))
        out[name] = hashlib.sha256(text.encode()).hexdigest()
    return out


def test_the_digest_sees_a_changed_value_and_not_the_run(tmp_path: Path) -> None:
    first, second = tmp_path / "20261205T074328462735Z", tmp_path / "20261205T074358554177Z"
    for folder, when, gib in [(first, "07:43:28", 15.5), (second, "07:43:58", 15.5)]:
        (folder / "models").mkdir(parents=True)
        (folder / "models" / "m.json").write_text(json.dumps(
            {"updated": f"2026-12-05T{when}Z", "weightsGiB": gib, "provenance": {"code_version": when}}))
        (folder / "index.html").write_text(f"<p>Snapshot {folder.name} · generated Dec 5, 2026, {when[1:]} AM UTC</p>")
        pl.DataFrame({"model_id": ["m"], "gib": [gib], "snapshot_id": [folder.name]}).write_parquet(
            folder / "sizing.parquet")
    assert digest(first) == digest(second)
    (second / "models" / "m.json").write_text(json.dumps({"updated": "x", "weightsGiB": 15.6}))
    pl.DataFrame({"model_id": ["m"], "gib": [15.6], "snapshot_id": [second.name]}).write_parquet(
        second / "sizing.parquet")
    changed = {k for k in digest(first) if digest(first)[k] != digest(second)[k]}
    assert changed == {"models/m.json", "sizing.parquet"}


def test_every_published_file_of_the_replay_run_is_unchanged(published: dict) -> None:
    current = digest(published["snapshot"])
    if os.environ.get("VRAMLAB_UPDATE_SNAPSHOT"):
        RECORD.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n")
    recorded = json.loads(RECORD.read_text())
    changed = sorted(k for k in current.keys() | recorded.keys() if current.get(k) != recorded.get(k))
    assert changed == [], "\n".join(changed)
