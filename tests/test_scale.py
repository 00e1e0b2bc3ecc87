"""Whole-Hub scale: what lets one process size thousands of models, checked on real runs.

- The replayed Hub listing of ``benchmarks/hub_world.py`` is discovered through the real discovery path and every
  generated repo sizes, each with an architecture of its own.
- A discovered model whose maximum context is below the setups' 8K request (many small Hub models) is answered at
  its maximum only; it used to fail the whole ``out__cheapest_setups`` step.
- ``cheapest_setups`` written a chunk of models at a time equals the table written in one go, computed by two
  worker processes equals it computed by one, and reading it back a chunk at a time (``StoredSetups``) gives every
  model the lists a whole read gives.
- The Hub state file is written once per batch of records, not once per model (it names every repo: N^2 bytes).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pytest
from dagster_duckdb import DuckDBResource

from pipeline.assets.out import out__cheapest_setups, out__exports
from pipeline.compute.setups_table import (
    SETUP_FORMATS,
    StoredSetups,
    loads_of,
    published_answers,
    read_overall,
    write_cheapest_setups,
)
from pipeline.compute.tracked import tracked_models
from pipeline.resources import VramlabSettings
from pipeline.sources.huggingface import HubState, load_watchlist

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

SETUP_ROWS = ("SELECT * EXCLUDE (computed_at) FROM cheapest_setups "
              "ORDER BY model_id, list, context, concurrency, sort, format, rank")


@pytest.fixture
def world(published: dict, tmp_path: Path) -> dict:
    data = tmp_path / "data"
    shutil.copytree(published["tmp"], data, symlinks=True)
    db = data / "vramlab.duckdb"
    return {"data": data, "db": db, "resources": {"vramlab": VramlabSettings(data_dir=str(data), db_path=str(db)),
                                                  "duckdb": DuckDBResource(database=str(db))}}


def _query(db: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_a_replayed_hub_listing_of_n_models_is_discovered_and_sized(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from hub_world import build

    from pipeline.assets.raw import raw_hub__models

    wanted = 70  # the 43 watchlist models + 27 generated repos (every real family once, none twice)
    w = build(tmp_path / "world", wanted)
    watchlist = load_watchlist().models
    assert len(w.generated) == wanted - len(watchlist) == 27 and len(w.real) == 42
    assert all(r.startswith("synthetic-") for r in w.generated)  # never a real repo id
    manifest = json.loads(w.manifest.read_text())["responses"]
    generated = [e for e in manifest if "generated config" in e.get("recording", "")]
    assert len(generated) == 27  # every generated config says so
    data = tmp_path / "data"
    monkeypatch.setenv("VRAMLAB_DISCOVERY", "1")
    monkeypatch.setenv("VRAMLAB_DISCOVERY_LIMIT", str(w.limit))
    monkeypatch.setenv("VRAMLAB_DISCOVERY_MIN_DOWNLOADS", "0")
    monkeypatch.setenv("VRAMLAB_HUB_REPLAY", str(w.manifest))
    resources = {"vramlab": VramlabSettings(data_dir=str(data), db_path=str(data / "vramlab.duckdb"))}
    result = dg.materialize([raw_hub__models], resources=resources)
    md = {k: v.value for k, v in result.asset_materializations_for_node("raw_hub__models")[0].metadata.items()}
    assert md["discovery"]["listed"] == 2 * w.limit  # both listings, every item
    assert md["discovery"]["already_tracked"] == w.limit + len(w.real)  # the real ones, and the second listing
    tracked = tracked_models(data)
    assert len(tracked) == wanted
    sized = [t for t in tracked if t.arch is not None]
    assert len(sized) == wanted  # every generated config parses and sizes
    by_repo = {t.entry.repo: t for t in tracked}
    # a generated variant is its family's config with other MLP widths: e.g. Llama-3.1-8B's 14336 x 0.75 =
    # 10752 (a multiple of 128), so a distinct, smaller model
    base, variant = by_repo["meta-llama/Llama-3.1-8B"], next(t for r, t in by_repo.items()
                                                             if r.startswith("synthetic-meta-llama/Llama-3.1-8B-"))
    assert variant.hub.config["intermediate_size"] == 10752 == 14336 * 3 // 4
    assert sum(t.numel for t in variant.arch.tensors) < sum(t.numel for t in base.arch.tensors)


def test_a_model_shorter_than_the_setups_request_is_answered_at_its_maximum_and_the_run_goes_on(world: dict) -> None:
    """Once ``ContextTooLongError`` from the first 8K placement failed ``out__cheapest_setups``, and then the
    exports, for every model. Since the standard loads such a model is answered at its own maximum only
    (4K x 1, by price and by cost per token); its model file, sized at the published 8K, says why it failed."""
    before = _query(world["db"], SETUP_ROWS)
    state = HubState(world["data"])
    repo = "Qwen/Qwen3-8B"
    hub = state.latest(repo)
    # a 4K-context revision (as phi-2, GPT-2 and many small Hub models have: max_position_embeddings < 8192)
    state.save(hub.model_copy(update={"sha": "c" * 40, "config": hub.config | {"max_position_embeddings": 4096}}))
    model_id = next(t.entry.id for t in tracked_models(world["data"]) if t.entry.repo == repo)
    result = dg.materialize([out__cheapest_setups, out__exports], resources=world["resources"])
    md = {k: v.value for k, v in result.asset_materializations_for_node("out__cheapest_setups")[0].metadata.items()}
    assert md["models_without_setups"] == 0
    after = _query(world["db"], SETUP_ROWS)
    columns = [d for (d,) in _query(world["db"], "SELECT column_name FROM information_schema.columns WHERE "
                                                 "table_name = 'cheapest_setups' AND column_name <> 'computed_at' "
                                                 "ORDER BY ordinal_position")]
    load = [columns.index(c) for c in ("context", "concurrency", "sort")]
    mine = {tuple(r[i] for i in load) for r in after if r[0] == model_id}
    # by price, by cost per token and the cheapest meeting the default interactive floor (none may meet it)
    assert mine - {(4096, 1, "floor")} == {(4096, 1, "price"), (4096, 1, "per_token")}
    assert (8192, 1, "price") in {tuple(r[i] for i in load) for r in before if r[0] == model_id}
    assert [r for r in after if r[0] != model_id] == [r for r in before if r[0] != model_id]  # the others unchanged
    index = json.loads((world["data"] / "exports" / "latest" / "index.json").read_text())["models"]
    entry = next(m for m in index if m["id"] == model_id)  # its file says why, the others are published
    assert entry["status"] == "failed" and "8,192 is above the model's maximum 4,096" in entry["reason"]
    assert sum(m["status"] == "ok" for m in index) == len(index) - 1


def test_setups_written_in_chunks_equal_the_table_written_at_once(world: dict,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import UTC, datetime

    before = _query(world["db"], SETUP_ROWS)
    cache_rows = _query(world["db"], "SELECT count(*) FROM placement_cache")[0][0]
    tracked = [t for t in tracked_models(world["data"]) if t.arch is not None]
    con = duckdb.connect(str(world["db"]))
    try:
        con.execute("DELETE FROM placement_cache")  # cold: every chunk plans and writes its own cache rows
        run = write_cheapest_setups(con, tracked, as_of=world["resources"]["vramlab"].as_of(),
                                    now=datetime.now(UTC), chunk=4)  # 43 models: 11 chunks, the last of 3
        assert run.hits["placement"] == 0 and run.misses["placement"] > 1000
        assert con.execute("SELECT count(*) FROM placement_cache").fetchall()[0][0] == cache_rows == run.written
        # the pruning bounds' weight bytes are kept too: every format of every model, as computed here
        from pipeline.compute import rates

        kept = con.execute("SELECT model_id, format, total_bytes, active_bytes FROM weight_bytes_cache").fetchall()
        by_id = {t.entry.id: t for t in tracked}
        assert len(kept) == len(SETUP_FORMATS) * len(tracked)
        assert all(rates.weight_bytes(by_id[m].arch, f) == (total, active) for m, f, total, active in kept)
        rates._WEIGHTS.clear()  # a new process: nothing known ...

        def no_walk(*_a: object) -> None:
            raise AssertionError("weight bytes walked again")

        monkeypatch.setattr(rates, "tensor_bits", no_walk)  # ... and nothing walked: every value read back
        again = write_cheapest_setups(con, tracked, as_of=world["resources"]["vramlab"].as_of(),
                                      now=datetime.now(UTC), chunk=7)  # warm: every placement read back
        assert again.misses["placement"] == 0 and again.hits["placement"] == run.misses["placement"]
        assert again.loaded == cache_rows and again.written == 0 and again.pruned == 0
    finally:
        con.close()
    assert _query(world["db"], SETUP_ROWS) == before and len(before) > 1000


SERVING_ROWS = "SELECT * FROM serving_cache ORDER BY ALL"


def test_a_run_in_which_only_prices_moved_serves_no_layout_it_served_before(world: dict,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The cheapest setups meeting the default floor are found by serving candidates; what a layout does at a load
    is kept in ``serving_cache``. The next run, prices 10% lower (the price order the same, the layouts served the
    same), calls neither the steady state nor the lower bounds, and writes the table a run without the cache
    writes. A new revision of one model drops that model's rows only."""
    import dataclasses
    from datetime import UTC, datetime

    from pipeline.compute import service_setups

    tracked = [t for t in tracked_models(world["data"]) if t.arch is not None]
    as_of, now = world["resources"]["vramlab"].as_of(), datetime.now(UTC)
    con = duckdb.connect(str(world["db"]))
    try:
        con.execute("DELETE FROM serving_cache")
        con.execute("UPDATE offers_current SET price_per_hour_usd = price_per_hour_usd * 0.9, "
                    "price_per_gpu_hour_usd = price_per_gpu_hour_usd * 0.9")
        cold = write_cheapest_setups(con, tracked, as_of=as_of, now=now)
        expected = con.execute(SETUP_ROWS).fetchall()
        stored = con.execute(SERVING_ROWS).fetchall()
        assert cold.serving_hits == {"serving": 0, "bound": 0} and cold.serving_misses["serving"] > 100
        assert cold.serving_written == len(stored) == cold.serving_misses["bound"]  # every layout screened once

        def never(*_a: object, **_k: object) -> None:
            raise AssertionError("a layout served again")

        monkeypatch.setattr(service_setups, "serve_layout", never)
        monkeypatch.setattr(service_setups.SetupServer, "bound_shortfall", never)
        warm = write_cheapest_setups(con, tracked, as_of=as_of, now=now)
        assert con.execute(SETUP_ROWS).fetchall() == expected
        assert warm.serving_hits == cold.serving_misses and warm.serving_misses == {"serving": 0, "bound": 0}
        assert warm.serving_loaded == len(stored) and warm.serving_written == 0 and warm.serving_pruned == 0
        assert con.execute(SERVING_ROWS).fetchall() == stored

        monkeypatch.undo()
        changed = tracked[0]
        mine = sum(r[0] == changed.entry.id for r in stored)
        moved = [t if t is not changed else dataclasses.replace(t, revision="another-sha") for t in tracked]
        again = write_cheapest_setups(con, moved, as_of=as_of, now=now)
        assert again.serving_pruned == mine > 0
        assert again.serving_misses["serving"] == sum(r[0] == changed.entry.id and r[14] for r in stored)
    finally:
        con.close()


def test_setups_computed_by_two_worker_processes_equal_those_of_one(world: dict,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """``write_cheapest_setups(workers=2)``: chunks computed by two forked processes, written by the step's own
    process in chunk order. Cold both times: the same table, the same placement-cache and weight-bytes rows, the
    same counters; the step's own process computed no chunk itself (its calls are counted: a worker's count stays
    in the worker); and after each chunk the per-model memos are empty (a worker given a thousand models
    held hundreds of MiB of them)."""
    from datetime import UTC, datetime

    from pipeline.compute import setups_table
    from sizing_core import memo

    calls: list[int] = []
    computed = setups_table.compute_chunk

    def counted(*args: Any, **kwargs: Any) -> Any:  # noqa: ANN401 - passes through
        calls.append(1)
        return computed(*args, **kwargs)

    monkeypatch.setattr(setups_table, "compute_chunk", counted)
    tracked = [t for t in tracked_models(world["data"]) if t.arch is not None]
    as_of, now = world["resources"]["vramlab"].as_of(), datetime.now(UTC)
    cache_sql = "SELECT * FROM placement_cache ORDER BY ALL"
    weights_sql = "SELECT * FROM weight_bytes_cache ORDER BY ALL"
    con = duckdb.connect(str(world["db"]))
    results = []
    try:
        for workers in (1, 2):
            con.execute("DELETE FROM placement_cache")
            con.execute("DELETE FROM weight_bytes_cache")
            con.execute("DELETE FROM serving_cache")
            calls.clear()
            run = write_cheapest_setups(con, tracked, as_of=as_of, now=now, chunk=5, workers=workers)
            results.append((con.execute(SETUP_ROWS).fetchall(), con.execute(cache_sql).fetchall(),
                            con.execute(weights_sql).fetchall(), run, len(calls),
                            con.execute(SERVING_ROWS).fetchall()))
            assert not any(memo._MEMOS) and len(memo._MEMOS) > 10  # every memo registered, all emptied
    finally:
        con.close()
    (rows1, cache1, weights1, run1, calls1, served1), (rows2, cache2, weights2, run2, calls2, served2) = results
    assert rows2 == rows1 and len(rows1) > 1000
    assert served2 == served1 and run2.serving_misses == run1.serving_misses and run1.serving_misses["serving"] > 0
    assert cache2 == cache1 and weights2 == weights1 and len(weights1) == len(SETUP_FORMATS) * len(tracked)
    assert (run2.rows, run2.hits, run2.misses, run2.written, run2.best, run2.skipped) == (
        run1.rows, run1.hits, run1.misses, run1.written, run1.best, run1.skipped)
    assert run1.misses["placement"] > 1000
    assert calls1 == -(-len(tracked) // 5) and calls2 == 0


def test_model_files_sized_by_two_worker_processes_equal_those_of_one(world: dict, tmp_path: Path) -> None:
    """``publish(workers=2)``: the model files' price-independent parts computed by two forked processes. Published
    at the same moment with nothing re-used, both snapshots hold byte-identical model files and index; and every
    model was sized in this run either way."""
    from datetime import UTC, datetime

    from pipeline.exports.build import publish

    tracked = tracked_models(world["data"])
    as_of, now = world["resources"]["vramlab"].as_of(), datetime.now(UTC)
    files, sized = [], []
    con = duckdb.connect(str(world["db"]))
    try:
        loads = loads_of(tracked)
        for workers in (1, 2):
            stats: dict = {}
            snapshot = publish(con, tmp_path / f"exports-{workers}", tracked, StoredSetups(con, loads), as_of=as_of,
                               mode="replay", now=now, provenance={}, stats=stats, reuse=False, workers=workers)
            files.append({p.name: p.read_bytes() for p in [*(snapshot / "models").glob("*.json"),
                                                             snapshot / "index.json"]})
            sized.append(stats["models_sized"])
    finally:
        con.close()
    assert files[0] == files[1] and len(files[0]) > 40
    assert sized[0] == sized[1] == sorted(t.entry.id for t in tracked if t.arch is not None)


def _overall_of_every_row(con: duckdb.DuckDBPyConnection, loads: dict) -> dict:
    """The reference: every stored row read back as a Setup and the answers made of them in Python (the read
    the step made before it aggregated in DuckDB)."""
    cursor = con.execute("SELECT * FROM cheapest_setups ORDER BY model_id, list, context, concurrency, sort, format, "
                         "rank")
    cols = [d[0] for d in cursor.description]
    return published_answers([dict(zip(cols, values, strict=True)) for values in cursor.fetchall()], loads)


def test_the_overall_lists_read_from_candidates_equal_those_of_every_row(world: dict) -> None:
    """``read_overall`` reads only the rows that can be in a model's overall lists (filtered in DuckDB); the lists
    must be those ``overall`` makes of every row, setup for setup. A second pass doubles every multi-machine
    price's weight by making each model's cheapest on-demand row a 2-node one, so the x1.25 rank factor decides."""
    loads = loads_of(tracked_models(world["data"]))
    con = duckdb.connect(str(world["db"]))
    try:
        reference = _overall_of_every_row(con, loads)
        assert read_overall(con, loads) == reference and len(reference) > 30
        # every model is asked at its standard loads (one for a model of at most 8K tokens); most are answered, by
        # price and by cost per token (a long load on a big model may find no setup)
        assert all(by_load for _, _, by_load in reference.values())
        answered = [x for _, _, by_load in reference.values() for x in by_load if x["byPrice"] and x["byCostPerToken"]]
        assert len(answered) > 2 * len(reference)
        total = con.execute("SELECT count(*) FROM cheapest_setups").fetchall()[0][0]
        shown = sum(len(od) + len(sp) + sum(len(x["byPrice"]) + len(x["byCostPerToken"]) for x in by_load)
                    for od, sp, by_load in reference.values())
        assert shown < total / 3  # (what the filter saves: most rows, the per-format 8K lists, are never shown)
        con.execute("UPDATE cheapest_setups SET nodes = 2, instances = 2 WHERE (model_id, list, format, rank) IN "
                    "(SELECT model_id, list, format, rank FROM cheapest_setups WHERE list = 'on_demand' "
                    "QUALIFY row_number() OVER (PARTITION BY model_id, context, concurrency, sort "
                    "ORDER BY price_per_hour, format) = 1)")
        changed = _overall_of_every_row(con, loads)
        assert changed != reference and read_overall(con, loads) == changed
    finally:
        con.close()


def test_setups_read_back_a_chunk_at_a_time_equal_a_whole_read(published: dict) -> None:
    loads = dict(reversed(loads_of(tracked_models(published["tmp"])).items()))
    con = duckdb.connect(str(published["db"]), read_only=True)
    try:
        whole = read_overall(con, loads)
        stored = StoredSetups(con, loads, chunk=5)
        got = {m: stored.get(m, ([], [])) for m in loads}
        assert len(whole) > 30 and all(got[m] == whole[m] for m in loads)
        assert sum(len(od) for od, _, _ in whole.values()) > 100
        assert stored.get("not-a-model", "absent") == "absent"
    finally:
        con.close()


def test_hub_state_is_written_once_per_batch_and_at_the_end(world: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    state = HubState(world["data"])
    repo = next(iter(state.state))
    hub = state.latest(repo)
    writes: list[int] = []
    real_flush = HubState.flush
    monkeypatch.setattr(HubState, "flush", lambda self: (writes.append(len(self.state)), real_flush(self))[1])
    with pytest.raises(RuntimeError), state.batched(every=10):
        for i in range(25):  # 25 new revisions: written after the 10th and 20th, and at the (failed) end
            state.save(hub.model_copy(update={"sha": f"{i:040x}"}))
        raise RuntimeError("stopped")
    assert len(writes) == 3
    on_disk = json.loads((world["data"] / "hub" / "state.json").read_text())
    assert on_disk[repo]["sha"] == f"{24:040x}"  # the last save is on disk although the batch failed
    state.save(hub)  # outside a batch: written at once, as before
    assert len(writes) == 4 and json.loads((world["data"] / "hub" / "state.json").read_text())[repo]["sha"] == hub.sha


def test_a_landing_batch_logs_a_fetch_only_at_its_flush_after_its_files(tmp_path: Path) -> None:
    """Hub payloads are landed without an fsync each and synced 100 at a time; a log line may only reach the
    fetch log after its payload's files are written, so a line never names a payload that is not there."""
    from datetime import UTC, datetime

    from pipeline.sources.base import RawPart, RawPayload
    from pipeline.sources.landing import FetchLogEntry, LandingBatch, read_log, resolve_raw_path

    def fetch(i: int) -> RawPayload:
        return RawPayload(source=f"hub__org__m{i}", fetched_at=datetime(2026, 11, 28, 12, tzinfo=UTC),
                          parts=(RawPart(url=f"https://huggingface.co/api/models/org/m{i}", status=200, headers={},
                                         body=b'{"sha": "%d"}' % i),))

    batch = LandingBatch(tmp_path, every=3)
    for i in range(4):
        path = batch.land(fetch(i))
        assert path.exists()  # the files are written at once ...
        batch.log(FetchLogEntry(source=f"hub:org/m{i}", provider="huggingface", outcome="ok", raw_path=str(path),
                                started_at=datetime(2026, 11, 28, 12, tzinfo=UTC),
                                finished_at=datetime(2026, 11, 28, 12, tzinfo=UTC)))
        # ... the lines only when 3 are waiting (after the 3rd), then the 4th at the final flush
        assert len(read_log(tmp_path)) == (3 if i >= 2 else 0)
    batch.flush()
    logged = read_log(tmp_path)
    assert [e.source for e in logged] == [f"hub:org/m{i}" for i in range(4)]
    assert all(resolve_raw_path(e.raw_path, tmp_path).exists() for e in logged)
    assert not batch.entries and not batch.written
