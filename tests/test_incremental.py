"""The hourly run does only what changed: a model whose Hub revision and a GPU whose catalog row are
unchanged keep their sizing rows; a changed revision or GPU row is re-sized (and only that); setups follow
changed offers; and the published exports equal those of a full rebuild."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import dagster as dg
import duckdb
import polars as pl
import pytest
from dagster_duckdb import DuckDBResource

from pipeline.assets.core import core__gpus
from pipeline.assets.out import out__cheapest_setups, out__exports, out__sizing
from pipeline.compute.grid import GRID_CONTEXTS
from pipeline.compute.grid_bytes import GRID_FORMATS
from pipeline.resources import VramlabSettings
from pipeline.sources.huggingface import HubState
from sizing_core.engines import engines_on
from sizing_core.gpus import catalog


@pytest.fixture
def world(published: dict, tmp_path: Path) -> dict:
    """A private copy of the published replay run (data directory and DuckDB file) to change and re-run."""
    data = tmp_path / "data"
    shutil.copytree(published["tmp"], data, symlinks=True)  # exports/latest stays a (relative) link
    db = data / "vramlab.duckdb"
    return {"data": data, "db": db, "resources": {"vramlab": VramlabSettings(data_dir=str(data), db_path=str(db)),
                                                  "duckdb": DuckDBResource(database=str(db))}}


def _metadata(result: dg.ExecuteInProcessResult, node: str) -> dict:
    return {k: v.value for k, v in result.asset_materializations_for_node(node)[0].metadata.items()}


def _query(db: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _duplicate_sizing_keys(db: Path) -> int:
    """Rows sharing a grid cell's key (the table has no PRIMARY KEY since sql/012: unique by construction)."""
    return _query(db, "SELECT count(*) - count(DISTINCT (model_id, format, context, gpu_id, engine)) FROM sizing")[0][0]


def test_nothing_changed_nothing_is_resized(world: dict) -> None:
    md = _metadata(dg.materialize([out__sizing], resources=world["resources"]), "out__sizing")
    models = _query(world["db"], "SELECT count(DISTINCT model_id) FROM sizing")[0][0]
    assert md["rows_computed"] == 0 and md["models_recomputed"] == 0 and md["gpus_recomputed"] == 0
    assert md["models_skipped"] == models and md["rows_reused"] == md["dagster/row_count"] > 100_000
    assert md["gpus_skipped"] == len(catalog())
    assert _duplicate_sizing_keys(world["db"]) == 0  # the full run's table


def test_a_new_hub_revision_resizes_that_model_only(world: dict) -> None:
    repo, model_id = _query(world["db"], "SELECT repo, id FROM models WHERE id IN (SELECT model_id FROM sizing) "
                                         "AND repo LIKE 'Qwen/Qwen3-8B' LIMIT 1")[0]
    state = HubState(world["data"])
    state.save(state.latest(repo).model_copy(update={"sha": "f" * 40}))  # the Hub moved to a new commit
    before = _query(world["db"], "SELECT count(*) FROM sizing")[0][0]
    md = _metadata(dg.materialize([out__sizing], resources=world["resources"]), "out__sizing")
    n_cells = len(GRID_FORMATS) * len(GRID_CONTEXTS) * sum(len(engines_on(g)) for g in catalog().values())
    assert md["models_recomputed"] == 1 and md["gpus_recomputed"] == 0
    assert md["rows_computed"] == n_cells and md["dagster/row_count"] == before
    assert model_id in md["skipped"].split("Re-sized models:")[1]
    revisions = dict(_query(world["db"], "SELECT model_id, any_value(revision) FROM sizing GROUP BY model_id "
                                         "HAVING count(DISTINCT revision) = 1"))
    assert revisions[model_id] == "f" * 40
    assert all(r != "f" * 40 for m, r in revisions.items() if m != model_id)
    assert _duplicate_sizing_keys(world["db"]) == 0


def test_changed_sizing_code_resizes_every_model(world: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fix to the sizing rules (same Hub revisions, same GPU rows) must reach the stored grid: the rows carry
    the code version they were computed with, and rows of another version are not reused."""
    import pipeline.assets.out as out

    models = _query(world["db"], "SELECT count(DISTINCT model_id) FROM sizing")[0][0]
    before = _query(world["db"], "SELECT count(*) FROM sizing")[0][0]
    monkeypatch.setattr(out, "grid_version", lambda: "a-sizing-fix")
    md = _metadata(dg.materialize([out__sizing], resources=world["resources"]), "out__sizing")
    assert md["models_recomputed"] == models and md["models_skipped"] == 0
    assert md["rows_computed"] == md["dagster/row_count"] == before
    assert _query(world["db"], "SELECT DISTINCT sizing_version FROM sizing") == [("a-sizing-fix",)]
    assert _duplicate_sizing_keys(world["db"]) == 0
    md = _metadata(dg.materialize([out__sizing], resources=world["resources"]), "out__sizing")
    assert md["rows_computed"] == 0 and md["models_skipped"] == models  # and then nothing again


def test_a_changed_gpu_row_resizes_that_gpu_only(world: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    real = catalog()
    h100 = real["h100"]
    changed = {**real, "h100": h100.model_copy(update={"bandwidth_gbs": h100.bandwidth_gbs * 2})}
    monkeypatch.setattr("pipeline.storage.loaders.catalog", lambda: changed)  # what core__gpus loads
    monkeypatch.setattr("pipeline.assets.out.catalog", lambda: changed)  # what the grid sizes
    decode_sql = ("SELECT model_id, format, context, engine, decode_tokens_per_s FROM sizing WHERE gpu_id = 'h100' "
                  "AND decode_tokens_per_s IS NOT NULL ORDER BY ALL")
    before = _query(world["db"], decode_sql)
    others_sql = "SELECT count(*), sum(decode_tokens_per_s) FROM sizing WHERE gpu_id <> 'h100'"
    other_before = _query(world["db"], others_sql)[0]
    result = dg.materialize([core__gpus, out__sizing], resources=world["resources"])
    md = _metadata(result, "out__sizing")
    models = _query(world["db"], "SELECT count(DISTINCT model_id) FROM sizing")[0][0]
    assert md["gpus_recomputed"] == 1 and md["models_recomputed"] == 0
    assert md["rows_computed"] == models * len(GRID_FORMATS) * len(GRID_CONTEXTS) * len(engines_on(h100))
    after = _query(world["db"], decode_sql)
    assert len(after) == len(before) > 100
    # a decode step is its bandwidth term plus fixed costs (layers, routing, all-reduces): twice the bandwidth
    # halves the first and keeps the second, so each cell gets faster, by less than 2x; the step's fixed part,
    # 2 / after - 1 / before (seconds per token), is positive
    assert all(a[:4] == b[:4] and b[4] < a[4] < 2 * b[4] for a, b in zip(after, before, strict=True))
    fixed = {a[:4]: 2 / a[4] - 1 / b[4] for a, b in zip(after, before, strict=True)}
    assert all(f > 0 for f in fixed.values())
    other_after = _query(world["db"], others_sql)[0]  # (a parallel float sum: equal up to summation order)
    assert other_after[0] == other_before[0] and other_after[1] == pytest.approx(other_before[1], rel=1e-12)
    assert _duplicate_sizing_keys(world["db"]) == 0


def _snapshot_tables(snapshot: Path) -> dict[str, object]:
    """Every data file of a published snapshot, minus what names the moment it was written."""
    volatile = ("generated", "computed", "snapshot", "published", "sha256", "created", "updated")
    out: dict[str, object] = {}

    def clean(obj: object) -> object:
        if isinstance(obj, dict):
            return {k: clean(v) for k, v in obj.items() if not any(w in k.lower() for w in volatile)}
        if isinstance(obj, list):
            return [clean(v) for v in obj]
        return obj

    for path in sorted(p for p in snapshot.rglob("*") if p.is_file() and p.name != "manifest.json"):
        rel = str(path.relative_to(snapshot))
        if path.suffix == ".parquet":
            frame = pl.read_parquet(path)
            rows = frame.drop([c for c in frame.columns if any(w in c.lower() for w in volatile)]).to_dicts()
            # row order follows the DuckDB table's insertion order, which reuse changes: compare as sorted rows
            out[rel] = sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))
        elif path.suffix == ".json":
            out[rel] = clean(json.loads(path.read_text()))
    return out


PLACEMENT_KEY = "model_id, gpu_id, gpus_per_instance, format, context, concurrency"  # a placement per load


def test_incremental_run_with_changed_prices_publishes_what_a_full_rebuild_publishes(world: dict) -> None:
    setups_sql = "SELECT model_id, list, format, rank, source, price_per_hour FROM cheapest_setups ORDER BY ALL"
    before = _query(world["db"], setups_sql)
    placed_before = set(_query(world["db"], f"SELECT {PLACEMENT_KEY} FROM placement_cache "
                                            "WHERE gpus_per_instance > 0"))
    floors_sql = ("SELECT model_id, gpu_id, format, context, concurrency FROM placement_cache "
                  "WHERE gpus_per_instance = 0")  # a floor per load
    floors_before = set(_query(world["db"], floors_sql))
    con = duckdb.connect(str(world["db"]))
    con.execute("UPDATE offers_current SET price_per_hour_usd = price_per_hour_usd * 0.5, "
                "price_per_gpu_hour_usd = price_per_gpu_hour_usd * 0.5 WHERE source = 'skypilot-runpod'")
    con.close()
    out_assets = [out__sizing, out__cheapest_setups, out__exports]
    incremental = dg.materialize(out_assets, resources=world["resources"])
    assert _metadata(incremental, "out__sizing")["rows_computed"] == 0  # only prices moved: no re-sizing
    # ... and no re-planning of what was planned before: the only placements computed are of instance shapes
    # that the cheaper offers brought above the pruning line for the first time (groups with a runpod offer)
    setups_md = _metadata(incremental, "out__cheapest_setups")
    assert setups_md["placements_reused"] > 1000
    assert setups_md["placements_computed"] < setups_md["placements_reused"] / 10
    exports_md = _metadata(incremental, "out__exports")  # model files: only the priced part re-assembled
    assert exports_md["model_files_sized"] == 0 and exports_md["model_files_reused"] > 10
    new_keys = set(_query(world["db"], f"SELECT {PLACEMENT_KEY} FROM placement_cache WHERE gpus_per_instance > 0")) \
        - placed_before
    runpod_groups = set(_query(world["db"], "SELECT DISTINCT gpu_id, gpu_count FROM offers_current "
                                            "WHERE source = 'skypilot-runpod'"))
    assert len(new_keys) == setups_md["placements_computed"]
    # the floor lists search deeper while fewer than 5 setups meet the default floor (cheaper runpod setups that
    # miss it push the search on), so a few other groups may be placed for the first time; the price and
    # per-token lists alone place runpod groups only
    outside = {(k[1], k[2]) for k in new_keys} - runpod_groups
    assert len(outside) <= max(20, setups_md["placements_reused"] // 100)
    # floors are computed lazily (only when a group's cheapest offer is within the top so far), so the only
    # floors computed are of GPU kinds a cheaper runpod offer brought within reach for the first time
    new_floors = set(_query(world["db"], floors_sql)) - floors_before
    assert len(new_floors) == setups_md["floors_computed"] < setups_md["placements_reused"] / 100
    # (the floor lists' deeper search, as above, may reach a few other GPU kinds: 11 on the replay, where the
    # cheaper runpod setups that miss the default floor push the search on)
    assert len({k[1] for k in new_floors} - {gpu for gpu, _ in runpod_groups}) <= 15
    assert _query(world["db"], setups_sql) != before  # setups were recomputed from the changed offers
    first = _snapshot_tables(Path(_metadata(incremental, "out__exports")["snapshot"]))

    con = duckdb.connect(str(world["db"]))
    con.execute("DELETE FROM sizing")  # a full rebuild: nothing to reuse
    con.execute("DELETE FROM placement_cache")
    con.execute("DELETE FROM serving_cache")
    con.execute("DELETE FROM step_inputs")
    con.execute("DELETE FROM export_cache")
    con.close()
    rebuild = dg.materialize(out_assets, resources=world["resources"])
    assert _metadata(rebuild, "out__exports")["model_files_reused"] == 0
    assert _metadata(rebuild, "out__sizing")["models_skipped"] == 0
    assert _metadata(rebuild, "out__cheapest_setups")["placements_reused"] == 0
    assert _metadata(rebuild, "out__cheapest_setups")["servings_reused"] == 0
    assert _metadata(incremental, "out__exports")["servings_reused"] > 0  # the model files' servings re-used
    second = _snapshot_tables(Path(_metadata(rebuild, "out__exports")["snapshot"]))
    assert first.keys() == second.keys() and len(first) > 10
    for name in first:
        assert first[name] == second[name], name


# ------------------------------------------------------------------ the cheapest-setups placement cache (sql/008)

SETUP_ROWS = ("SELECT * EXCLUDE (computed_at) FROM cheapest_setups ORDER BY model_id, list, format, rank")


def test_setups_rerun_reuses_every_placement_and_equals_a_cold_run(world: dict) -> None:
    cold_con = duckdb.connect(str(world["db"]))
    cold_con.execute("DELETE FROM placement_cache")  # a cold start: everything planned in this run
    cold_con.execute("DELETE FROM step_inputs")
    cold_con.close()
    cold = _metadata(dg.materialize([out__cheapest_setups], resources=world["resources"]), "out__cheapest_setups")
    cold_rows = _query(world["db"], SETUP_ROWS)
    assert cold["placements_reused"] == 0 and cold["placements_computed"] > 1000 and not cold["inputs_unchanged"]
    cached = _query(world["db"], "SELECT count(*), count(DISTINCT model_id) FROM placement_cache")[0]
    assert cached[0] > cold["placements_computed"] and cached[1] == cold["models"] > 10  # placements + floors

    # the same offers, models, catalog and code again: the table is kept as it is, computed_at included
    every_column = _query(world["db"], "SELECT * FROM cheapest_setups ORDER BY ALL")
    kept = _metadata(dg.materialize([out__cheapest_setups], resources=world["resources"]), "out__cheapest_setups")
    assert kept["inputs_unchanged"] and "is kept" in kept["kept"]
    assert kept["placements_reused"] == kept["placements_computed"] == kept["servings_reused"] == 0
    assert kept["dagster/row_count"] == cold["dagster/row_count"] and kept["top_setups"] == cold["top_setups"]
    assert _query(world["db"], "SELECT * FROM cheapest_setups ORDER BY ALL") == every_column

    with duckdb.connect(str(world["db"])) as con:  # rows lost behind the step's back: the record no longer holds
        con.execute("DELETE FROM cheapest_setups WHERE rank = 1")
    mended = _metadata(dg.materialize([out__cheapest_setups], resources=world["resources"]), "out__cheapest_setups")
    assert not mended["inputs_unchanged"] and _query(world["db"], SETUP_ROWS) == cold_rows

    with duckdb.connect(str(world["db"])) as con:  # the record gone (as after another writer): planned again
        con.execute("DELETE FROM step_inputs")
    warm = _metadata(dg.materialize([out__cheapest_setups], resources=world["resources"]), "out__cheapest_setups")
    assert warm["placements_computed"] == warm["floors_computed"] == warm["rates_computed"] == 0
    assert warm["servings_computed"] == 0 and warm["servings_reused"] > 0  # shown in the UI beside the placements
    assert warm["placements_reused"] == cold["placements_computed"] and warm["models_replanned"] == 0
    assert _query(world["db"], SETUP_ROWS) == cold_rows  # the same answer, read back from the cache


def test_a_new_hub_revision_replans_that_model_only(world: dict) -> None:
    dg.materialize([out__cheapest_setups], resources=world["resources"])  # the cache holds every model
    before = _query(world["db"], SETUP_ROWS)
    repo, model_id = _query(world["db"], "SELECT repo, id FROM models WHERE repo = 'Qwen/Qwen3-8B' LIMIT 1")[0]
    state = HubState(world["data"])
    state.save(state.latest(repo).model_copy(update={"sha": "e" * 40}))  # the Hub moved to a new commit
    md = _metadata(dg.materialize([out__cheapest_setups], resources=world["resources"]), "out__cheapest_setups")
    assert md["models_replanned"] == 1 and model_id in md["placement_cache"].split("Re-planned models:")[1]
    assert md["placements_computed"] > 0 and md["placements_reused"] > 10 * md["placements_computed"]
    revisions = dict(_query(world["db"], "SELECT model_id, list(DISTINCT revision) FROM placement_cache "
                                         "GROUP BY model_id"))
    assert revisions[model_id] == ["e" * 40]  # the old revision's rows are gone
    assert _query(world["db"], SETUP_ROWS) == before  # same config under a new sha: the same setups


def test_a_changed_gpu_row_replans_that_gpu_only(world: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    dg.materialize([out__cheapest_setups], resources=world["resources"])
    # the lists by price: a GPU's bandwidth moves no placement and no price there. (By cost per token it does: a
    # GPU twice as fast is half the cost per token and takes others' places in those lists.)
    by_price = "sort = 'price' AND"
    rate_sql = ("SELECT model_id, list, format, context, concurrency, rank, decode_tokens_per_s FROM cheapest_setups "
                f"WHERE {by_price} gpu_id = '{{}}' AND decode_tokens_per_s IS NOT NULL ORDER BY ALL")
    gpu_id = _query(world["db"], "SELECT gpu_id FROM cheapest_setups WHERE decode_tokens_per_s IS NOT NULL "
                                 "GROUP BY gpu_id ORDER BY count(*) DESC, gpu_id LIMIT 1")[0][0]
    before = _query(world["db"], rate_sql.format(gpu_id))
    others = _query(world["db"], f"SELECT * EXCLUDE (computed_at) FROM cheapest_setups WHERE {by_price} "
                                 f"gpu_id <> '{gpu_id}' ORDER BY ALL")
    real = catalog()
    gpu = real[gpu_id]
    changed = {**real, gpu_id: gpu.model_copy(update={"bandwidth_gbs": gpu.bandwidth_gbs * 2})}
    monkeypatch.setattr("pipeline.compute.setups_table.catalog", lambda: changed)  # what the cache is validated against
    monkeypatch.setattr("pipeline.compute.setups.catalog", lambda: changed)  # what the planner places on
    md = _metadata(dg.materialize([out__cheapest_setups], resources=world["resources"]), "out__cheapest_setups")
    assert md["gpus_replanned"] == 1 and md["placement_cache"].split("Re-planned GPUs:")[1].strip(" .") == gpu_id
    assert md["placements_computed"] > 0
    after = _query(world["db"], rate_sql.format(gpu_id))
    # bandwidth does not change placements or prices, so the same setups rank; a decode step is the weights and
    # cache read at the bandwidth plus fixed per-layer costs (engines.speed): twice the bandwidth halves
    # the first part only, so every setup gets faster, by less than 2x
    assert [a[:6] for a in after] == [b[:6] for b in before] and len(after) > 10
    assert all(b[6] < a[6] < 2 * b[6] for a, b in zip(after, before, strict=True))
    assert _query(world["db"], f"SELECT * EXCLUDE (computed_at) FROM cheapest_setups WHERE {by_price} "
                               f"gpu_id <> '{gpu_id}' ORDER BY ALL") == others


def test_a_new_hub_revision_resizes_that_model_file_only(world: dict) -> None:
    exports = [out__exports]
    dg.materialize(exports, resources=world["resources"])  # the export cache holds every model
    repo, model_id = _query(world["db"], "SELECT repo, id FROM models WHERE repo = 'Qwen/Qwen3-8B' LIMIT 1")[0]
    state = HubState(world["data"])
    state.save(state.latest(repo).model_copy(update={"sha": "d" * 40}))
    md = _metadata(dg.materialize(exports, resources=world["resources"]), "out__exports")
    assert md["model_files_sized"] == 1 and model_id in md["model_files_cache"].split("Sized in this run:")[1]
    assert md["model_files_reused"] == _query(world["db"], "SELECT count(*) FROM export_cache")[0][0] - 1
    published = json.loads((Path(md["snapshot"]) / "models" / f"{model_id}.json").read_text())
    assert published["provenance"]["revision"] == "d" * 40
    cold = duckdb.connect(str(world["db"]))
    cold.execute("DELETE FROM export_cache")
    cold.close()
    rebuilt = _metadata(dg.materialize(exports, resources=world["resources"]), "out__exports")
    assert rebuilt["model_files_reused"] == 0
    assert _snapshot_tables(Path(md["snapshot"])) == _snapshot_tables(Path(rebuilt["snapshot"]))
