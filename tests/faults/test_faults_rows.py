"""No row stops publishing: a NULL verdict, an unknown GPU, a NaN, zero or huge price, an odd string or date in the
stored offers and observations is published as stored or left out with a counted reason, never raised.

The store is a copy of the replay run's DuckDB file (the session's ``published`` fixture); rows are damaged in it
by hand or by hypothesis, then the real exporter and report run on it."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from dagster_duckdb import DuckDBResource
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pipeline.exports.build import publish
from pipeline.exports.publish import check_snapshot
from pipeline.exports.schema import SCHEMA_VERSION

AS_OF = datetime(2026, 11, 28, 12, tzinfo=UTC)
ODD_TEXT = ["[/bold]", "\x1b]0;owned\x07", "\x1b[2J", "<script>alert(1)</script>", "", "ü" * 300]
ODD_PRICES = [float("nan"), 0.0, -1.0, 1e12, float("inf")]
ODD_TIMES = ["1970-01-01 00:00:00+00", "2099-12-31 23:59:59+00"]


def _store(published: dict, tmp_path: Path) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(published["db"], data / "vramlab.duckdb")
    shutil.copytree(published["tmp"] / "hub", data / "hub")
    return data


def _publish(data: Path, now: datetime) -> Path:
    con = duckdb.connect(str(data / "vramlab.duckdb"))
    try:
        return publish(con, data / "exports", [], {}, as_of=AS_OF, mode="replay", now=now,
                       provenance={"code_version": "t"})
    finally:
        con.close()


damage = st.lists(st.tuples(st.sampled_from(["gpu", "verdict", "price", "provider", "time"]),
                            st.integers(min_value=0, max_value=10_000),
                            st.sampled_from(range(len(ODD_TEXT))), st.sampled_from(range(len(ODD_PRICES)))),
                  min_size=1, max_size=12)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=damage)
# a provider name with a terminal title sequence on an observation reaches the price history's per-day
# provider list: the report prints it as text, without the control characters
@example(changes=[("provider", 1, 1, 0)])
def test_damaged_rows_never_stop_a_snapshot(published: dict, tmp_path_factory: pytest.TempPathFactory,
                                            changes: list[tuple[str, int, int, int]]) -> None:
    data = _store(published, tmp_path_factory.mktemp("rows"))
    con = duckdb.connect(str(data / "vramlab.duckdb"))
    n = con.execute("SELECT count(*) FROM price_observations").fetchall()[0][0]
    for kind, row, text, price in changes:
        pick = "rowid = (SELECT rowid FROM price_observations ORDER BY offer_key, observed_at LIMIT 1 OFFSET ?)"
        value = {"gpu": ("gpu_id", None), "verdict": ("eligible", None), "price": ("price_per_gpu_hour_usd",
                 ODD_PRICES[price]), "provider": ("provider", ODD_TEXT[text]),
                 "time": ("observed_at", ODD_TIMES[text % 2])}[kind]
        if kind == "time":  # the key (offer_key, observed_at) stays unique
            clash = con.execute(f"SELECT count(*) FROM price_observations WHERE offer_key = (SELECT offer_key FROM "
                                f"price_observations WHERE {pick}) AND observed_at = ?::TIMESTAMPTZ",
                                [row % n, value[1]]).fetchall()[0][0]
            if clash:
                continue
        con.execute(f"UPDATE price_observations SET {value[0]} = ? WHERE {pick}", [value[1], row % n])
    # the same damage on current offers: an unknown GPU id, a NaN price, an odd region
    con.execute("UPDATE offers_current SET gpu_id = 'zz-no-such-gpu' WHERE rowid = (SELECT min(rowid) FROM "
                "offers_current)")
    con.execute("UPDATE offers_current SET price_per_hour_usd = 'nan'::DOUBLE, price_per_gpu_hour_usd = 'nan'::DOUBLE "
                "WHERE rowid = (SELECT max(rowid) FROM offers_current)")
    con.execute("UPDATE offers_current SET region = ? WHERE rowid = (SELECT min(rowid) + 1 FROM offers_current)",
                [ODD_TEXT[changes[0][2]]])
    judged = con.execute("SELECT count(*) FROM price_observations WHERE eligible IS NOT NULL").fetchall()[0][0]
    stored_no_gpu = con.execute("SELECT count(*) FROM price_observations WHERE eligible IS NOT NULL AND gpu_id IS NULL"
                                ).fetchall()[0][0]
    nan_eligible = con.execute("SELECT count(*) FROM offers_judged WHERE eligible AND NOT "
                               "isfinite(price_per_hour_usd)").fetchall()[0][0]
    con.close()
    snap = _publish(data, datetime(2026, 12, 1, 1, tzinfo=UTC))

    assert check_snapshot(snap) == []
    assert (data / "exports" / "latest").resolve() == snap
    manifest = json.loads((snap / "manifest.json").read_text())
    # every judged observation is in the history; the unjudged ones wait for a verdict (parts are never rewritten)
    assert sum(p["rows"] for p in manifest["history"]) == judged
    assert manifest["left_out"].get("price_observations", {}).get("no_gpu", 0) == stored_no_gpu
    assert nan_eligible == 0  # a NaN price is never eligible (the verdict's own rule)
    prices = (snap / "report" / "prices.html").read_text()
    assert "\x1b" not in prices and "<script>alert" not in prices


def test_unjudged_observations_are_judged_by_the_next_run_and_it_publishes(published: dict, tmp_path: Path) -> None:
    """The store after an upgrade, a failed quality step or a rebuild: observations without a verdict. The next run
    judges every one of them and publishes; the report leaves out none as "not judged"."""
    data = _store(published, tmp_path)
    db = data / "vramlab.duckdb"
    con = duckdb.connect(str(db))
    con.execute("UPDATE price_observations SET eligible = NULL, quarantined = NULL, quality_reasons = NULL")
    total = con.execute("SELECT count(*) FROM price_observations").fetchall()[0][0]
    con.close()
    from pipeline.definitions import ALL_ASSETS
    from pipeline.resources import VramlabSettings

    result = dg.materialize(ALL_ASSETS, resources={"vramlab": VramlabSettings(data_dir=str(data), db_path=str(db)),
                                                   "duckdb": DuckDBResource(database=str(db))})
    assert result.success
    con = duckdb.connect(str(db), read_only=True)
    unjudged = con.execute("SELECT count(*) FROM price_observations WHERE eligible IS NULL").fetchall()[0][0]
    con.close()
    assert unjudged == 0
    manifest = json.loads(((data / "exports" / "latest") / "manifest.json").read_text())
    assert "not_judged" not in manifest["left_out"].get("price_observations", {})
    assert sum(p["rows"] for p in manifest["history"]) == total


def test_export_check_accepts_a_manifest_of_an_earlier_schema_version(published: dict, tmp_path: Path) -> None:
    """A snapshot published by an earlier release (schema 2: no ``history``, no ``left_out``) checks clean; a
    manifest that claims today's version must still match today's contract whole."""
    latest = (published["tmp"] / "exports" / "latest").resolve()
    old = tmp_path / "old"
    shutil.copytree(latest, old)
    manifest = json.loads((old / "manifest.json").read_text())
    for key in ("history", "left_out"):
        manifest.pop(key, None)
    (old / "manifest.json").write_text(json.dumps(manifest | {"schema_version": "2"}))
    assert check_snapshot(old) == []
    (old / "manifest.json").write_text(json.dumps(manifest | {"schema_version": SCHEMA_VERSION}))
    assert any("history" in p for p in check_snapshot(old))


def test_the_readmes_path_publishes_every_time(published: dict, tmp_path: Path) -> None:
    """N01 the README's own path through the real commands: a run (the session's replay run, copied), then
    ``vramlab replay backfill`` on the same data dir, then ``vramlab run``. Before, a replayed SkyPilot-Vast row
    the quality stage never judged reached the report as "eligible" with a NULL GPU and every later publish failed
    in ``out__exports``. Each command exits 0 and leaves a snapshot that checks clean; nothing is left unjudged."""
    import os
    import subprocess
    import sys

    from harness import ROOT

    data, home = tmp_path / "data", tmp_path / "home"
    shutil.copytree(published["tmp"], data, symlinks=True)
    home.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DAGSTER_HOME": str(home), "VRAMLAB_DATA_DIR": str(data)}
    env.pop("VRAMLAB_DB", None)
    vramlab = Path(sys.executable).parent / "vramlab"
    for command in (("replay", "backfill", "--data-dir", str(data)), ("run", "--quiet", "--data-dir", str(data))):
        before = (data / "exports" / "latest").resolve().name
        proc = subprocess.run([str(vramlab), *command], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=900)
        assert proc.returncode == 0, (command, (proc.stdout + proc.stderr)[-3000:])
        assert (data / "exports" / "latest").resolve().name != before, command  # a new snapshot each time
        check = subprocess.run([str(vramlab), "export", "--check", "--data-dir", str(data)], cwd=ROOT, env=env,
                               capture_output=True, text=True, timeout=300)
        assert check.returncode == 0, check.stdout + check.stderr
    con = duckdb.connect(str(data / "vramlab.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM price_observations WHERE eligible IS NULL").fetchall()[0][0] == 0
    con.close()
