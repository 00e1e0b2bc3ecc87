"""Cheapest setups priced on what providers really rent."""

from __future__ import annotations

import math
from datetime import UTC, datetime

from helpers import arch

from pipeline.compute.setups import SPOT_LIKE, cheapest_setups, instances_needed
from sizing_core.engines import default_engine
from sizing_core.gpus import get_gpu
from sizing_core.placement import fewest_gpus

NOW = datetime(2026, 11, 28, 12, tzinfo=UTC)


def offer(**kw):  # type: ignore[no-untyped-def]
    base = dict(source="test", provider="p", instance_type="i", region="r1", gpu_id="h100", gpu_count=8,
                price_per_hour_usd=80.0, currency="USD", fx_date=None, allocation="on_demand", verified_at=NOW,
                stale=False, removed=False, jump_unconfirmed=False, fractional=False)
    return base | kw


def test_instances_needed() -> None:
    assert instances_needed(6, 8, spans_machines=True) == 1  # 6 GPUs on an 8-GPU instance: rent 8
    assert instances_needed(6, 1, spans_machines=True) == 6  # 1-GPU marketplace offers x 6
    assert instances_needed(6, 4, spans_machines=False) is None  # an engine that cannot span machines
    assert instances_needed(8, 8, spans_machines=True) == 1


def test_partial_node_is_priced_as_the_whole_instance() -> None:
    a = arch("meta-llama__Llama-3.1-70B")
    gpu = get_gpu("h100")
    needed = fewest_gpus(a, gpu, default_engine(gpu), "bf16").gpus
    assert needed is not None and 1 < needed < 8
    [setup] = cheapest_setups(a, "bf16", [offer(gpu_count=8, price_per_hour_usd=80.0)])
    assert (setup.gpus_needed, setup.instances, setup.gpus) == (needed, 1, 8)
    assert setup.price_per_hour == 80.0 and setup.price_per_gpu_hour == 10.0
    assert setup.price_per_month == 80.0 * 730


def test_one_gpu_marketplace_offers_are_multiplied() -> None:
    a = arch("meta-llama__Llama-3.1-70B")
    gpu = get_gpu("rtx-4090")
    needed = fewest_gpus(a, gpu.model_copy(update={"max_gpus_per_node": 1}), default_engine(gpu), "q4_k_m").gpus
    market = offer(gpu_id="rtx-4090", gpu_count=1, price_per_hour_usd=0.30, allocation="marketplace",
                   provider="vast", instance_type="vast-1")
    assert cheapest_setups(a, "q4_k_m", [market]) == []  # marketplace is never in the on-demand list
    [setup] = cheapest_setups(a, "q4_k_m", [market], allocations=SPOT_LIKE)
    assert setup.instances == needed and math.isclose(setup.price_per_hour, round(needed * 0.30, 4))


def test_stale_removed_jumps_and_fractional_offers_are_excluded() -> None:
    a = arch("meta-llama__Llama-3.1-8B")
    good = offer(instance_type="good", gpu_count=1, price_per_hour_usd=3.0)
    bad = [offer(instance_type=f"bad-{k}", gpu_count=1, price_per_hour_usd=1.0, **{k: True})
           for k in ("stale", "removed", "jump_unconfirmed", "fractional")]
    setups = cheapest_setups(a, "bf16", [good, *bad])
    assert [s.instance_type for s in setups] == ["good"]


def test_spot_kept_apart_and_currency_converted() -> None:
    a = arch("meta-llama__Llama-3.1-8B")
    eur = offer(instance_type="eur", gpu_count=1, currency="EUR", fx_date="2024-02-27",
                price_per_hour_usd=2.0 * 1.0856)  # 2 EUR at the ECB rate of that date
    spot = offer(instance_type="spot", gpu_count=1, price_per_hour_usd=0.5, allocation="spot")
    on_demand = cheapest_setups(a, "bf16", [eur, spot])
    assert [s.instance_type for s in on_demand] == ["eur"]
    assert on_demand[0].price_per_hour == round(2.0 * 1.0856, 4) and on_demand[0].fx_date == "2024-02-27"
    assert on_demand[0].currency_listed == "EUR"
    assert [s.instance_type for s in cheapest_setups(a, "bf16", [eur, spot], allocations=SPOT_LIKE)] == ["spot"]


def test_multi_instance_setups_stay_in_one_offer() -> None:
    a = arch("meta-llama__Llama-3.1-70B")
    one = offer(gpu_id="rtx-4090", gpu_count=1, price_per_hour_usd=0.4, instance_type="one", region="a")
    other = offer(gpu_id="rtx-4090", gpu_count=1, price_per_hour_usd=0.35, instance_type="one", region="b")
    setups = cheapest_setups(a, "q4_k_m", [one, other])
    # each setup rents all its instances from one region of one offer: no mixing of regions
    assert {(s.region, s.price_per_hour / s.instances) for s in setups} == {("b", 0.35), ("a", 0.4)}
