"""The data directory's layout has one home (``pipeline/data_dir.py``): every path under it is asked of a
``DataDir``, never joined from part names elsewhere."""

from __future__ import annotations

import re
from pathlib import Path

from pipeline.data_dir import DataDir
from pipeline.ingest.lookup import hub_record
from pipeline.sources.huggingface import HubState

ROOT = Path(__file__).resolve().parent.parent
#: a path joined from one of the data directory's part or file names
JOINED = re.compile(r'/ ?"(raw|hub|exports|cache|parts|latest|history|models|fetch_log\.jsonl|state\.json|'
                    r'vramlab\.duckdb|\.dagster_home|discovered\.json|discovery\.json|validators\.json|'
                    r'baseline\.json|hub-lookups|watchlist\.json)"')


def test_no_module_joins_data_directory_paths_itself() -> None:
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
             for folder in ("pipeline", "scripts", "benchmarks") for path in sorted((ROOT / folder).rglob("*.py"))
             if path.name != "data_dir.py"
             for n, line in enumerate(path.read_text().splitlines(), 1)
             # the bundled replay recordings, the package data and the checkout's own files are the repository's
             # layout, not the data directory's; a snapshot folder's files are the published one (docs/exports.md)
             if JOINED.search(line) and not re.search(
                 r'REPLAY_ROOT|REPO_ROOT|ROOT / "pipeline"|_PIPELINE|SHARED|__file__|resources\.files|snap\.path|out /', line)]
    assert found == []


def test_layout_as_docs_operating_states_it() -> None:
    d = DataDir(Path("/srv/vramlab"))
    assert d.database == Path("/srv/vramlab/vramlab.duckdb")
    assert d.fetch_log == Path("/srv/vramlab/raw/fetch_log.jsonl")
    assert d.validators("runpod") == Path("/srv/vramlab/raw/runpod/validators.json")
    assert d.drift_baseline("vastai") == Path("/srv/vramlab/raw/vastai/baseline.json")
    sha = "0123456789abcdef0123456789abcdef01234567"
    assert d.hub_revision("Qwen/Qwen3-8B", sha) == Path(f"/srv/vramlab/hub/models/Qwen__Qwen3-8B/{sha}.json")
    assert d.watchlist == Path("/srv/vramlab/watchlist.json")
    assert d.latest == Path("/srv/vramlab/exports/latest")
    assert d.history == Path("/srv/vramlab/exports/history")
    assert d.cli_cache == Path("/srv/vramlab/cache/cli")
    # the look-ups keep a data directory of their own, laid out the same way
    assert d.lookups.hub_state == Path("/srv/vramlab/cache/hub-lookups/hub/state.json")


def test_the_cli_reads_the_hub_record_where_the_ingest_wrote_it(tmp_path: Path) -> None:
    sha = "89a0ff1bd8a0ba9a6ac1a1da43d2d9ed2a5a6e3c"
    state = HubState(tmp_path)
    path = state.record_path("Qwen/Qwen3-8B", sha)
    path.parent.mkdir(parents=True)
    path.write_text('{"repo": "Qwen/Qwen3-8B"}')
    state.state["Qwen/Qwen3-8B"] = {"sha": sha}
    state.flush()
    # repo ids are case-insensitive on the Hub: a user's spelling finds the kept record
    assert hub_record(DataDir(tmp_path), "qwen/qwen3-8b") == ({"repo": "Qwen/Qwen3-8B"}, sha)
    # a state entry whose sha is not a revision never names a file
    state.state["Qwen/Qwen3-8B"] = {"sha": "../../etc/passwd"}
    state.flush()
    assert hub_record(DataDir(tmp_path), "Qwen/Qwen3-8B") is None


def test_move_aside_takes_the_wal_along_under_the_same_stamp(tmp_path: Path) -> None:
    """A database killed mid-write leaves a WAL: it moves aside with the file, under the file's name plus ``.wal``."""
    from datetime import UTC, datetime

    from pipeline.ops.rebuild import move_aside

    db = tmp_path / "vramlab.duckdb"
    db.write_bytes(b"db")
    (tmp_path / "vramlab.duckdb.wal").write_bytes(b"wal")
    aside = move_aside(db, now=datetime(2026, 12, 7, 21, 30, 19, tzinfo=UTC))
    assert aside == tmp_path / "vramlab.duckdb.aside-20261207T213019Z"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vramlab.duckdb.aside-20261207T213019Z",
                                                         "vramlab.duckdb.aside-20261207T213019Z.wal"]
    assert aside.read_bytes() == b"db" and move_aside(db) is None
