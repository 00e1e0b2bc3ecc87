"""Cheapest setups priced on what providers really rent."""

from __future__ import annotations

import math
from datetime import UTC, datetime

from helpers import arch

from pipeline.compute.setups import SPOT_LIKE, cheapest_setups, instances_needed
from sizing_core.engines import default_engine
from sizing_core.gpus import get_gpu
from sizing_core.placement.search import fewest_gpus

NOW = datetime(2026, 11, 28, 12, tzinfo=UTC)


def offer(**kw):  # type: ignore[no-untyped-def]
    base = dict(source="test", provider="p", instance_type="i", region="r1", gpu_id="h100", gpu_count=8,
                price_per_hour_usd=80.0, currency="USD", fx_date=None, allocation="on_demand", verified_at=NOW,
                stale=False, removed=False, jump_unconfirmed=False, fractional=False, eligible=True)
    return base | kw  # eligible: the offers_judged view's verdict (sql/020), which every real offer carries


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


def test_only_offers_the_view_judged_eligible_are_used() -> None:
    """Setups never re-derive the rule: an offer is used when it carries ``eligible = true`` (stale,
    removed, jump and fractional offers are not eligible in the view: tests/test_offer_truth.py), and an offer
    without a verdict (``eligible`` missing or null) is never used."""
    a = arch("meta-llama__Llama-3.1-8B")
    good = offer(instance_type="good", gpu_count=1, price_per_hour_usd=3.0)
    bad = [offer(instance_type="judged-not", gpu_count=1, price_per_hour_usd=1.0, eligible=False),
           offer(instance_type="no-verdict", gpu_count=1, price_per_hour_usd=1.0, eligible=None)]
    unjudged = {k: v for k, v in offer(instance_type="unjudged", gpu_count=1, price_per_hour_usd=1.0).items()
                if k != "eligible"}
    setups = cheapest_setups(a, "bf16", [good, *bad, unjudged])
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


# --- what a user would really deploy ( item 4) ---------------------------------------------------------

def _needed(model: str, gpu_id: str, fmt: str, per_node: int) -> int:
    gpu = get_gpu(gpu_id)
    placed = fewest_gpus(arch(model), gpu.model_copy(update={"max_gpus_per_node": per_node}), default_engine(gpu), fmt)
    assert placed.gpus is not None
    return placed.gpus


def test_llama_cpp_rpc_is_flagged_and_never_ranked_above_a_single_machine_within_25_percent() -> None:
    a = arch("meta-llama__Llama-3.1-70B")
    n = _needed("meta-llama__Llama-3.1-70B", "rtx-4090", "q4_k_m", 1)
    assert 2 <= n <= 4  # ~40 GiB of Q4_K_M weights over 24 GB cards
    rpc_price = n * 0.30
    single = offer(provider="box", instance_type="4x4090", gpu_id="rtx-4090", gpu_count=4,
                   price_per_hour_usd=round(rpc_price * 1.2, 4))  # 20 % dearer than the RPC chain
    chain = offer(provider="cheap", instance_type="1x4090", gpu_id="rtx-4090", gpu_count=1, price_per_hour_usd=0.30)
    first, second = cheapest_setups(a, "q4_k_m", [chain, single])
    assert (first.instance_type, first.nodes, first.deployment) == ("4x4090", 1, "single_machine")
    assert (second.instances, second.nodes, second.deployment) == (n, n, "llama.cpp-rpc")
    assert second.price_per_hour < first.price_per_hour and "RPC" in second.flags[0]
    assert second.layout == f"{n} x 1 GPU ({n} nodes), TP 1 x PP {second.pipeline_parallel}"
    # 30 % dearer: now the RPC chain (ranked at 1.25 x its price) comes first
    single["price_per_hour_usd"] = round(rpc_price * 1.3, 4)
    assert cheapest_setups(a, "q4_k_m", [chain, single])[0].deployment == "llama.cpp-rpc"


def test_rpc_chains_longer_than_four_machines_are_not_offered() -> None:
    a = arch("meta-llama__Llama-3.1-70B")
    n = _needed("meta-llama__Llama-3.1-70B", "rtx-4090", "bf16", 1)
    assert n > 4  # 140 GB of BF16 weights: 6+ cards
    chain = offer(provider="cheap", instance_type="1x4090", gpu_id="rtx-4090", gpu_count=1, price_per_hour_usd=0.30)
    assert cheapest_setups(a, "bf16", [chain]) == []  # before: n separately rented machines chained as one


def test_vllm_spans_nodes_only_over_a_rented_cluster_interconnect() -> None:
    a = arch("meta-llama__Llama-3.1-70B")
    n = _needed("meta-llama__Llama-3.1-70B", "h100", "bf16", 1)
    assert n > 1
    plain = offer(provider="somecloud", instance_type="1xH100", gpu_count=1, price_per_hour_usd=2.0)
    assert cheapest_setups(a, "bf16", [plain]) == []  # before: n one-GPU VMs as vLLM pipeline stages
    p5 = offer(provider="aws", instance_type="p5.48xlarge", gpu_count=8, price_per_hour_usd=55.04)
    [setup] = cheapest_setups(a, "bf16", [plain, p5])
    assert (setup.instances, setup.deployment, setup.interconnect) == (1, "single_machine", None)
    # a model that needs two 8-GPU nodes: only the EFA family may span them
    big = arch("deepseek-ai__DeepSeek-V3")
    two = [s for s in cheapest_setups(big, "bf16", [p5, offer(provider="lambda", instance_type="gpu_8x_h100_sxm5",
                                                              gpu_count=8, price_per_hour_usd=23.92)])]
    assert [(s.provider, s.deployment) for s in two] == [("aws", "cluster")]
    assert two[0].nodes >= 2 and two[0].interconnect.startswith("EFA")
    assert two[0].tensor_parallel <= 8 and two[0].pipeline_parallel == two[0].nodes


def test_ties_break_the_same_way_whatever_the_input_order() -> None:
    a = arch("meta-llama__Llama-3.1-8B")
    offers = [offer(provider=p, instance_type=i, region=r, gpu_count=1, price_per_hour_usd=2.0)
              for p, i, r in (("b", "x", "r2"), ("a", "y", "r1"), ("a", "x", "r2"), ("a", "x", "r1"))]
    expected = [("a", "x", "r1"), ("a", "x", "r2"), ("a", "y", "r1"), ("b", "x", "r2")]  # provider, type, region
    # one setup per provider x instance type x price: a's "x" in r1 and r2 is one row naming both regions
    distinct = [("a", "x", "r1", ["r1", "r2"]), ("a", "y", "r1", ["r1"]), ("b", "x", "r2", ["r2"])]
    for order in (offers, offers[::-1], offers[1:] + offers[:1]):
        assert [(s.provider, s.instance_type, s.region) for s in cheapest_setups(a, "bf16", order, by_region=True)
                ] == expected
        assert [(s.provider, s.instance_type, s.region, s.regions) for s in cheapest_setups(a, "bf16", order)
                ] == distinct


def test_ties_are_total_whatever_field_tells_two_setups_apart() -> None:
    """Two offers alike in provider, instance type, region, GPU and price (one from the direct API, one from an
    aggregator, seen at different times) used to tie on every rank field: the survivor was whichever came first."""
    a = arch("meta-llama__Llama-3.1-8B")
    later = datetime(2026, 11, 28, 13, tzinfo=UTC)
    twins = [offer(source="skypilot-x", gpu_count=1, price_per_hour_usd=2.0, verified_at=later),
             offer(source="direct-x", gpu_count=1, price_per_hour_usd=2.0, verified_at=NOW)]
    for order in (twins, twins[::-1]):
        [s] = cheapest_setups(a, "bf16", order)
        assert s.source == "direct-x"  # "direct-x" < "skypilot-x": the same answer in both orders
    same_but_time = [twins[1] | {"verified_at": later}, twins[1]]
    assert {cheapest_setups(a, "bf16", o)[0].verified_at for o in (same_but_time, same_but_time[::-1])} == {NOW}


def test_a_format_the_gpu_runs_only_through_a_fallback_says_so() -> None:
    a = arch("meta-llama__Llama-3.1-8B")
    v100 = offer(provider="verda", instance_type="1V100.6V", gpu_id="v100", gpu_count=1, price_per_hour_usd=0.9)
    assert cheapest_setups(a, "int8", [v100]) == []  # INT8 W8A8 does not run on Volta
    [awq] = cheapest_setups(a, "awq_int4", [v100])
    assert not awq.native_support and "GPTQ" in awq.support_note and awq.flags[0].startswith("not native")
    [bf16] = cheapest_setups(a, "bf16", [v100 | {"gpu_id": "v100-32gb"}])
    assert bf16.native_support and bf16.flags == []


def test_the_ecb_rate_date_travels_with_a_converted_price_and_goes_stale() -> None:
    a = arch("meta-llama__Llama-3.1-8B")
    eur = offer(currency="EUR", gpu_count=1, price_per_hour_usd=2.5)
    # 2024-02-27 -> 2026-11-28: 366 + 365 days to 2026-02-27, then 28+31+30+31+30+31+31+30+31+1 = 274: 1005 days
    [old] = cheapest_setups(a, "bf16", [eur | {"fx_date": "2024-02-27"}], as_of=NOW)
    assert old.fx_date == "2024-02-27" and old.fx_stale and "1005 days" in old.flags[0]
    for fx_date, stale in (("2026-11-24", False), ("2026-11-23", True)):  # 4 days is a weekend plus a holiday
        [s] = cheapest_setups(a, "bf16", [eur | {"fx_date": fx_date}], as_of=NOW)
        assert s.fx_stale is stale
    [usd] = cheapest_setups(a, "bf16", [offer(gpu_count=1, price_per_hour_usd=2.5)], as_of=NOW)
    assert usd.fx_date is None and not usd.fx_stale


def test_one_price_in_many_regions_is_one_setup_with_its_regions() -> None:
    """A provider listing one instance at one price in three regions (and a second source for it) is ranked once:
    the setup shows the offer ``Setup.rank_key`` puts first (source, then region) and names every region; a
    by-region search lists a setup per region."""
    from pipeline.compute.offer_groups import OfferGroups

    offers = [offer(source="s2", region="eu-1", price_per_hour_usd=20.0),
              offer(source="s1", region="us-2", price_per_hour_usd=20.0),
              offer(source="s1", region="us-1", price_per_hour_usd=20.0),
              offer(provider="q", instance_type="j", region="ap-1", price_per_hour_usd=24.0)]
    grouped = OfferGroups(offers)
    entries = grouped.distinct[("h100", 8)]
    assert [(lead["provider"], lead["source"], lead["region"], sorted(regions)) for lead, regions in entries] == [
        ("p", "s1", "us-1", ["eu-1", "us-1", "us-2"]), ("q", "test", "ap-1", ["ap-1"])]
    found = cheapest_setups(arch("meta-llama__Llama-3.1-8B"), "bf16", grouped, top=5)
    assert [(s.provider, s.source, s.region, s.regions, s.price_per_hour) for s in found] == [
        ("p", "s1", "us-1", ["eu-1", "us-1", "us-2"], 20.0), ("q", "test", "ap-1", ["ap-1"], 24.0)]
    per_region = cheapest_setups(arch("meta-llama__Llama-3.1-8B"), "bf16", grouped, top=5, by_region=True)
    assert sorted(s.region for s in per_region) == ["ap-1", "eu-1", "us-1", "us-2"]
