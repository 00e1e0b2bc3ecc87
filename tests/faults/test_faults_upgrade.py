"""Upgrades: a data directory made by an earlier release, then today's code. The migrations apply, every stored
observation is kept, each is judged, and the run publishes a snapshot that checks clean.

The fault as found: a data dir made by the code of 2026-11-29, then today's code: migrations applied and
observations kept, then every run failed in ``out__exports`` (their verdicts were NULL). The fixtures are real
data directories written by three earlier commits (tests/fixtures/upgrade/README.md says how); the run is the
whole asset graph on replay, in process, on a real DuckDB file."""

from __future__ import annotations

import tarfile
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from dagster_duckdb import DuckDBResource

from pipeline.exports.publish import check_snapshot

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "upgrade"
#: per archive, what its README records: schema versions applied then, observations stored
ARCHIVES = {"2026-11-29-6d38ee5.tar.xz": (3, 3636), "2026-12-01-c02346e.tar.xz": (12, 3639),
            "2026-12-02-946e97a.tar.xz": (17, 3639)}


def observation_keys(con: duckdb.DuckDBPyConnection) -> set[tuple]:
    return set(con.execute("SELECT offer_key, observed_at, price_per_hour_usd FROM price_observations").fetchall())


@pytest.mark.parametrize("archive", sorted(ARCHIVES))
def test_an_earlier_releases_data_dir_upgrades_and_publishes(archive: str, tmp_path: Path) -> None:
    from pipeline.definitions import ALL_ASSETS
    from pipeline.resources import VramlabSettings

    data = tmp_path / "data"
    data.mkdir()
    with tarfile.open(FIXTURES / archive) as tar:
        tar.extractall(data, filter="data")
    db = data / "vramlab.duckdb"
    versions, observations = ARCHIVES[archive]
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM schema_version").fetchone()[0] == versions  # as that release left it
    before = observation_keys(con)
    con.close()
    assert len(before) == observations

    result = dg.materialize(ALL_ASSETS, raise_on_error=False, resources={
        "vramlab": VramlabSettings(data_dir=str(data), db_path=str(db)), "duckdb": DuckDBResource(database=str(db))})
    assert result.success, [e.message for e in result.all_events if e.event_type_value == "STEP_FAILURE"]

    con = duckdb.connect(str(db), read_only=True)
    after = observation_keys(con)
    unjudged = con.execute("SELECT count(*) FROM price_observations WHERE eligible IS NULL").fetchone()[0]
    con.close()
    assert before <= after  # nothing stored by the earlier release is lost
    assert unjudged == 0
    latest = (data / "exports" / "latest").resolve()
    assert check_snapshot(latest) == []
