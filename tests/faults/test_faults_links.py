"""The data directory is ours: a part of it that is a symlink leading elsewhere is refused and named, never
written through silently.

The fault as found: ``raw/`` and ``exports/history`` symlinked outside the data directory were written through
without a word (a snapshot folder that is such a symlink is covered by the pruning tests in test_faults_rows.py).
The run here is the real price assets on replay (``dagster.materialize``); only the links are made by hand."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import materialize, price_assets

from pipeline.settings import ForeignLink, check_data_dir, foreign_links


def failure_of(result) -> str:  # type: ignore[no-untyped-def]
    event = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    return event.step_failure_data.user_failure_data.description


def test_a_raw_folder_linked_elsewhere_stops_the_run_before_it_writes(tmp_path: Path) -> None:
    data, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    data.mkdir()
    elsewhere.mkdir()
    (data / "raw").symlink_to(elsewhere, target_is_directory=True)
    result = materialize(price_assets(["skypilot-nebius"]), data)
    assert not result.success
    message = failure_of(result)
    assert "raw -> " + str(elsewhere.resolve()) in message and "VRAMLAB_ALLOW_FOREIGN_LINKS" in message, message
    assert list(elsewhere.iterdir()) == []  # nothing written through the link


def test_links_are_named_wherever_a_run_writes(tmp_path: Path) -> None:
    data, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    (data / "exports").mkdir(parents=True)
    (data / "raw" / "lambda").mkdir(parents=True)
    elsewhere.mkdir()
    (data / "exports" / "history").symlink_to(elsewhere, target_is_directory=True)
    (data / "raw" / "runpod").symlink_to(elsewhere, target_is_directory=True)
    (data / "exports" / "20261128T120000000000Z").mkdir()
    (data / "exports" / "latest").symlink_to("20261128T120000000000Z")  # ours: inside the data dir
    assert foreign_links(data) == {"exports/history": str(elsewhere.resolve()), "raw/runpod": str(elsewhere.resolve())}
    with pytest.raises(ForeignLink, match="exports/history -> .*raw/runpod -> "):
        check_data_dir(data)


def test_links_that_are_meant_can_be_allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, bigger_disk = tmp_path / "data", tmp_path / "disk"
    data.mkdir()
    bigger_disk.mkdir()
    (data / "raw").symlink_to(bigger_disk, target_is_directory=True)
    monkeypatch.setenv("VRAMLAB_ALLOW_FOREIGN_LINKS", "1")
    result = materialize(price_assets(["skypilot-nebius"]), data)
    assert result.success
    assert (bigger_disk / "fetch_log.jsonl").exists()


def test_a_snapshot_folder_linked_elsewhere_is_not_pruned_and_said(tmp_path: Path) -> None:
    """An old snapshot that is a symlink is only read by a run: the run goes on, pruning skips it after
    ``latest`` has switched and names it (it used to fail every run with ``Cannot call rmtree on a symbolic
    link`` while snapshots piled up)."""
    from pipeline.exports.publish import prune, switch_latest

    exports, elsewhere = tmp_path / "data" / "exports", tmp_path / "archive"
    exports.mkdir(parents=True)
    (elsewhere / "20261101T000000000000Z").mkdir(parents=True)
    (exports / "20261101T000000000000Z").symlink_to(elsewhere / "20261101T000000000000Z", target_is_directory=True)
    for name in ("20261102T000000000000Z", "20261103T000000000000Z"):
        (exports / name).mkdir()
    switch_latest(exports, "20261103T000000000000Z")
    assert foreign_links(tmp_path / "data") == {}  # a published snapshot is not a part a run writes
    skipped: dict[str, str] = {}
    prune(exports, keep=1, skipped=skipped)
    assert sorted(p.name for p in exports.iterdir()) == ["20261101T000000000000Z", "20261103T000000000000Z", "latest"]
    assert list(skipped) == ["20261101T000000000000Z"] and "symlink" in skipped["20261101T000000000000Z"]
    assert (elsewhere / "20261101T000000000000Z").is_dir()  # what the link points at is untouched
