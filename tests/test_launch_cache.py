"""The cheapest setup's launch command is kept with the model's cached price-independent part: planned
once per (GPU, instance size, engine, format) and model revision, re-used while that stays the cheapest, planned
again when another configuration becomes the cheapest, and always what planning it afresh gives."""

from __future__ import annotations

import duckdb
import pytest

from pipeline.compute.answers import setup_from_row
from pipeline.compute.tracked import tracked_models
from pipeline.exports import model_json
from pipeline.exports.static_cache import StaticCache
from sizing_core.engines import get_engine
from sizing_core.gpus import get_gpu
from sizing_core.launch import launch_command
from sizing_core.placement.search import fewest_gpus


def _fresh(t, best) -> dict | None:  # noqa: ANN001 - test helper
    placed = fewest_gpus(t.arch, get_gpu(best.gpu).model_copy(update={"max_gpus_per_node": best.gpus_per_instance}),
                         get_engine(best.engine), best.format)
    cmd = launch_command(placed, t.entry.repo)
    return cmd.model_dump(mode="json") if cmd else None


def test_a_launch_is_planned_once_per_configuration_and_equals_a_fresh_plan(published: dict,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    con = duckdb.connect(str(published["db"]), read_only=True)
    cursor = con.execute("SELECT * FROM cheapest_setups WHERE list = 'on_demand' ORDER BY model_id, format, rank")
    names = [d[0] for d in cursor.description]
    rows = [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]
    con.close()
    tracked = {t.entry.id: t for t in tracked_models(published["tmp"]) if t.arch is not None}
    model_id = next(r["model_id"] for r in rows if r["model_id"] in tracked)
    setups = [setup_from_row(r) for r in rows if r["model_id"] == model_id]
    first = setups[0]
    other = next(s for s in setups if (s.gpu, s.gpus_per_instance, s.format) != (first.gpu, first.gpus_per_instance,
                                                                                 first.format))
    calls = []
    real = model_json.fewest_gpus
    monkeypatch.setattr(model_json, "fewest_gpus", lambda *a, **kw: calls.append(a[1].id) or real(*a, **kw))
    t = tracked[model_id]
    cache = StaticCache({model_id: ("k", '{"fields": {}, "launches": {}}')})
    static = cache.get(model_id, "k")
    assert static is not None and cache.grown() == {}
    assert model_json.best_setup_launch(t, static, first) == _fresh(t, first)
    assert len(calls) == 1 and model_id in cache.grown()  # a new launch: the row is saved again
    # the next hour, the same configuration is still the cheapest (at another price): not planned again
    again = first.model_copy(update={"price_per_hour": first.price_per_hour * 0.9})
    assert model_json.best_setup_launch(t, static, again) == _fresh(t, first) and len(calls) == 1
    # another configuration becomes the cheapest: planned, and both kept
    assert model_json.best_setup_launch(t, static, other) == _fresh(t, other)
    assert len(calls) == 2 and len(static["launches"]) == 2
