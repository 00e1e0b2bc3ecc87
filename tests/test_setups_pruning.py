"""The pruned cheapest-setup search returns exactly what the full search returns, with fewer
placements: groups of offers whose cheapest price is above the current top-5 are never placed."""

from __future__ import annotations

import duckdb
from helpers import arch

from pipeline.compute.setups import ON_DEMAND, SPOT_LIKE, Planner, cheapest_setups
from sizing_core.registry import load_registered

MODELS = {"llama8": arch("meta-llama__Llama-3.1-8B"), "llama70": arch("meta-llama__Llama-3.1-70B"),
          "dsv3": arch("deepseek-ai__DeepSeek-V3"), "kimi": load_registered("kimi-k3.1-pro")[1]}
FORMATS = ("native", "bf16", "fp8", "q4_k_m", "awq_int4")


def test_pruned_top5_equals_the_full_ranking_and_places_fewer_groups(published: dict) -> None:
    con = duckdb.connect(str(published["db"]), read_only=True)
    cursor = con.execute("SELECT * FROM offers_judged WHERE gpu_id IS NOT NULL")  # eligible: the view's verdict
    names = [d[0] for d in cursor.description]
    offers = [dict(zip(names, r, strict=True)) for r in cursor.fetchall()]
    con.close()
    pruned_places = full_places = compared = 0
    for a in MODELS.values():
        for fmt in FORMATS:
            for allocations in (ON_DEMAND, SPOT_LIKE):
                pruned_planner, full_planner = Planner(a, fmt, 8192, 1, "bf16"), Planner(a, fmt, 8192, 1, "bf16")
                top5 = cheapest_setups(a, fmt, offers, top=5, allocations=allocations, planner=pruned_planner)
                everything = cheapest_setups(a, fmt, offers, top=10**9, allocations=allocations,
                                             planner=full_planner)  # never prunes: every group is placed
                assert top5 == everything[:5]
                pruned_places += len(pruned_planner._placed)  # placements searched (rates need no full plan)
                full_places += len(full_planner._placed)
                compared += bool(top5)
    assert compared >= 20
    assert pruned_places < full_places / 2, (pruned_places, full_places)
