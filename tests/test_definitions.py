"""The Dagster code location: it loads, its graph matches the committed snapshot, its schedule is hourly UTC, and
real materializations on replay fill a real DuckDB file (idempotently, surviving a failing source)."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from dagster_duckdb import DuckDBResource

from pipeline.assets.partitioned import PARTITIONED_ASSETS
from pipeline.definitions import ALL_ASSETS, defs
from pipeline.resources import VramlabSettings
from pipeline.settings import REPLAY_SNAPSHOT_AT
from pipeline.sources import PRICE_SOURCES
from pipeline.sources.base import REFERENCE
from pipeline.sources.replay import REPLAY_ROOT

SNAPSHOT = Path(__file__).resolve().parent / "snapshots" / "asset_specs.json"


def spec_snapshot() -> dict:
    graph = {}
    for spec in defs.resolve_all_asset_specs():
        graph[spec.key.to_user_string()] = {
            "group": spec.group_name,
            "deps": sorted(d.asset_key.to_user_string() for d in spec.deps),
            "pool": next((a.op.pool for a in [*ALL_ASSETS, *PARTITIONED_ASSETS] if spec.key in a.keys), None),
            "partitions": spec.partitions_def is not None,
            "automation": str(spec.automation_condition) if spec.automation_condition else None,
            "freshness": spec.freshness_policy is not None,
            "kinds": sorted(spec.kinds),
        }
    checks = sorted(f"{c.asset_key.to_user_string()}:{c.name}:{'blocking' if c.blocking else 'warn'}"
                    for c in defs.resolve_asset_graph().asset_check_keys
                    for c in [defs.resolve_asset_graph().get_check_spec(c)])
    return {"assets": graph, "checks": checks}


def test_definitions_load() -> None:
    dg.Definitions.validate_loadable(defs)


def test_asset_graph_matches_snapshot() -> None:
    """Fails on any accidental graph change; regenerate with VRAMLAB_UPDATE_SNAPSHOT=1 when the change is meant."""
    current = spec_snapshot()
    if os.environ.get("VRAMLAB_UPDATE_SNAPSHOT"):
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n")
    assert current == json.loads(SNAPSHOT.read_text())


def test_layer_names_groups_and_pool() -> None:
    snapshot = spec_snapshot()["assets"]
    assert len([k for k in snapshot if k.startswith("raw_prices__")]) == len(PRICE_SOURCES) + 1  # + the ECB rates
    for key, spec in snapshot.items():
        layer = key.split("__")[0].split("_")[0]
        assert layer in ("raw", "core", "out", "parts") and spec["group"] == layer
        # every asset that opens DuckDB (core and out; the two consolidations of the partitioned graph) is in the
        # pool; raw fetches and partition steps never open it
        opens_duckdb = layer in ("core", "out") or key in ("parts__offers", "parts__publish")
        assert (spec["pool"] == "duckdb") == opens_duckdb, key
        assert spec["partitions"] == (key in ("parts__prices", "parts__sizing", "parts__setups")), key


def test_schedule_is_hourly_utc_over_the_whole_graph() -> None:
    schedule = defs.resolve_schedule_def("hourly_refresh")
    assert schedule.cron_schedule == "0 * * * *" and schedule.execution_timezone == "UTC"
    assert schedule.tags == {"vramlab/refresh": "hourly"}
    job = defs.resolve_job_def(schedule.job_name)
    graph = spec_snapshot()["assets"]  # every asset but the partitioned graph's (its own jobs, docs/operating.md)
    assert {k.to_user_string() for k in job.asset_layer.selected_asset_keys} == {
        k for k, spec in graph.items() if spec["group"] != "parts"}


def test_schedule_skips_while_a_refresh_is_running() -> None:
    schedule = defs.resolve_schedule_def("hourly_refresh")
    with dg.instance_for_test() as instance:
        request = schedule.evaluate_tick(dg.build_schedule_context(instance=instance)).run_requests
        assert request and request[0].tags["vramlab/refresh"] == "hourly"
        instance.add_run(dg.DagsterRun(job_name="refresh", run_id="r1", tags={"vramlab/refresh": "hourly"},
                                       status=dg.DagsterRunStatus.STARTED))
        result = schedule.evaluate_tick(dg.build_schedule_context(instance=instance))
        assert not result.run_requests and "still active" in result.skip_message


def resources(tmp: Path, **extra) -> dict:  # type: ignore[no-untyped-def]
    db = tmp / "vramlab.duckdb"
    return {"vramlab": VramlabSettings(data_dir=str(tmp), db_path=str(db), **extra),
            "duckdb": DuckDBResource(database=str(db))}


@pytest.fixture(scope="module")
def full_run(published: dict) -> dict:
    tmp, first = published["tmp"], published["result"]
    con = duckdb.connect(str(tmp / "vramlab.duckdb"), read_only=True)
    counts = {t: con.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0]
              for t in ("price_observations", "offers_current", "gpus", "models", "model_revisions")}
    counts["reference_records"] = con.execute(
        "SELECT count(*) FROM price_observations WHERE allocation IN (SELECT UNNEST(?::VARCHAR[]))",
        [list(REFERENCE)]).fetchall()[0][0]
    # price sources' attempts and the Hub's (source hub:<repo>, in DuckDB too)
    counts["fetch_log"], counts["hub_attempts"] = con.execute(
        "SELECT count(*) FILTER (WHERE NOT starts_with(source, 'hub:')), count(*) FILTER (WHERE starts_with(source, "
        "'hub:')) FROM fetch_log").fetchall()[0]
    con.close()
    return {"tmp": tmp, "first": first, "counts": counts}


def test_full_graph_materializes_on_replay(full_run: dict) -> None:
    assert full_run["first"].success
    counts = full_run["counts"]
    assert counts["fetch_log"] == len(PRICE_SOURCES) + 1
    assert counts["hub_attempts"] == counts["model_revisions"] == 42  # one attempt per Hub model (one is a spec)
    # every observation of an offer is a current offer on the first run; the price feed's dated records are
    # observations without one: 966 prices in the bundled lines, of which line 2 of 2026-07.jsonl (22:17:26)
    # repeats 19 of line 1's (22:12:57) unchanged within the hour, stored once
    assert counts["price_observations"] - counts["reference_records"] == counts["offers_current"] > 3000
    assert counts["reference_records"] == 966 - 19
    assert counts["gpus"] >= 50 and counts["models"] == 43 and counts["model_revisions"] == 42
    evaluations = {(e.asset_key.to_user_string(), e.check_name): e for e in full_run["first"].get_asset_check_evaluations()}
    staleness = evaluations.pop(("core__offers_current", "source_staleness"))
    assert all(e.passed for e in evaluations.values()), {k: e.passed for k, e in evaluations.items()}
    # replayed recordings keep their capture dates: those captured more than 2 h before the freeze are stale
    recorded = json.loads((REPLAY_ROOT / "prices" / "manifest.json").read_text())["responses"]
    old = {e["source"] for e in recorded
           if datetime.fromisoformat(e["captured_at"]) < REPLAY_SNAPSHOT_AT - timedelta(hours=2)}
    assert old and not staleness.passed
    assert set(staleness.metadata["stale_sources"].value) == old
    # a warning in replay, naming each old recording's capture date (lambda's API: 2026-07-30), not a failure
    assert staleness.severity == dg.AssetCheckSeverity.WARN
    assert "replayed recordings keep their capture dates" in staleness.description
    assert "lambda 2026-07-30" in staleness.description


def test_second_run_of_the_same_hour_adds_no_duplicates(full_run: dict) -> None:
    again = dg.materialize(ALL_ASSETS, resources=resources(full_run["tmp"]))
    assert again.success
    con = duckdb.connect(str(full_run["tmp"] / "vramlab.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM price_observations").fetchall()[0][0] == \
        full_run["counts"]["price_observations"]
    prices, hub = con.execute("SELECT count(*) FILTER (WHERE NOT starts_with(source, 'hub:')), "
                              "count(*) FILTER (WHERE starts_with(source, 'hub:')) FROM fetch_log").fetchall()[0]
    assert prices == full_run["counts"]["fetch_log"]  # the replayed price fetches are not loaded twice
    assert hub == 2 * full_run["counts"]["hub_attempts"]  # every Hub attempt is logged (the second: unchanged)
    assert con.execute("SELECT count(*) FROM model_revisions").fetchall()[0][0] == 42
    con.close()
    md = again.asset_materializations_for_node("core__price_observations")[0].metadata
    assert md["new_observations"].value == 0


def test_one_failing_source_does_not_stop_the_others(tmp_path: Path) -> None:
    result = dg.materialize(ALL_ASSETS, resources=resources(tmp_path, fail_sources=["lambda"]))
    assert result.success
    lam = next(e.event_specific_data.materialization.metadata for e in result.get_asset_materialization_events()
               if e.event_specific_data.materialization.asset_key == dg.AssetKey("raw_prices__lambda"))
    assert lam["outcome"].value == "http_error"
    con = duckdb.connect(str(tmp_path / "vramlab.duckdb"), read_only=True)
    outcomes = dict(con.execute("SELECT source, outcome FROM fetch_log").fetchall())
    assert outcomes["lambda"] == "http_error" and outcomes["azure"] == "ok"
    sources = {r[0] for r in con.execute("SELECT DISTINCT source FROM price_observations").fetchall()}
    assert "lambda" not in sources and len(sources) == len(PRICE_SOURCES) - 1
    con.close()
