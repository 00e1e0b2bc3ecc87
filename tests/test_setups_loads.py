"""Cheapest setups at a load: K requests of C tokens, distinct setups (provider x instance type x price,
the regions in one row), ranked by price or by cost per output token; the per-token search prunes exactly."""

from __future__ import annotations

from datetime import UTC, datetime

import duckdb
import pytest
from helpers import arch

from pipeline.compute.answers import overall, standard_loads
from pipeline.compute.setups import Planner, cheapest_setups, eligible_offers

NOW = datetime(2026, 11, 28, 12, tzinfo=UTC)
MODELS = {"llama8": arch("meta-llama__Llama-3.1-8B"), "llama70": arch("meta-llama__Llama-3.1-70B"),
          "dsv3": arch("deepseek-ai__DeepSeek-V3")}


def offer(**kw: object) -> dict:
    base = {"provider": "p", "source": "s", "instance_type": "t", "region": "r1", "gpu_id": "h100", "gpu_count": 1,
            "price_per_hour_usd": 2.0, "allocation": "on_demand", "currency": "USD", "fx_date": None,
            "verified_at": NOW, "eligible": True}
    return base | kw


def test_per_token_top5_equals_the_full_ranking_and_places_fewer_groups(published: dict) -> None:
    con = duckdb.connect(str(published["db"]), read_only=True)
    offers = [o for o in eligible_offers(con) if o["gpu_id"] is not None]
    con.close()
    pruned = full = compared = 0
    for a in MODELS.values():
        for fmt in ("native", "fp8", "q4_k_m"):
            for context, concurrency in ((8192, 1), (32768, 8), (131072, 1)):
                p1, p2 = (Planner(a, fmt, context, concurrency, "bf16") for _ in range(2))
                top5 = cheapest_setups(a, fmt, offers, context=context, concurrency=concurrency, top=5,
                                       planner=p1, sort="per_token")
                everything = cheapest_setups(a, fmt, offers, context=context, concurrency=concurrency, top=10**9,
                                             planner=p2, sort="per_token")
                assert top5 == everything[:5]
                values = [s.usd_per_million_tokens_at_load * (1.25 if s.nodes > 1 else 1) for s in everything]
                # lowest cost per token first (multi-machine at 1.25x; the published figure is rounded to 4 places)
                assert all(x <= y + 1e-3 for x, y in zip(values, values[1:], strict=False))
                pruned, full, compared = pruned + len(p1._rates), full + len(p2._rates), compared + bool(top5)
    assert compared >= 15
    assert pruned < full / 2, (pruned, full)


def test_the_load_fields_are_the_cost_of_k_requests_together() -> None:
    a = MODELS["llama8"]
    [s] = cheapest_setups(a, "bf16", [offer(price_per_hour_usd=2.5)], context=32768, concurrency=8, as_of=NOW)
    assert (s.context, s.concurrency) == (32768, 8)
    # $/1M output tokens at the load = $/h / (8 requests x tok/s each x 3600 s) x 1e6: 8 x 2.5 / 8 ... by hand:
    per_second = 8 * s.tokens_per_s_per_request
    assert s.usd_per_million_tokens_at_load == pytest.approx(2.5 / (per_second * 3600) * 1e6, rel=1e-3)
    # eight requests share each step's weight reads: each decodes slower than a lone one, all together faster
    assert s.tokens_per_s_per_request < s.decode_tokens_per_s < per_second
    assert s.max_concurrent_requests >= 8  # the plan was sized to hold the load
    [one] = cheapest_setups(a, "bf16", [offer(price_per_hour_usd=2.5)], as_of=NOW)
    assert one.tokens_per_s_per_request == one.decode_tokens_per_s  # K = 1: the single-stream figures
    assert one.usd_per_million_tokens_at_load == one.usd_per_million_tokens


def test_one_row_per_provider_instance_type_and_price() -> None:
    a = MODELS["llama8"]
    regions = ("CA", "CZ", "IS", "NL", "US")
    same = [offer(provider="runpod", instance_type="1x_A6000", region=r, gpu_id="rtx-a6000", price_per_hour_usd=0.49)
            for r in regions]
    dearer = offer(provider="runpod", instance_type="1x_A6000", region="SE", gpu_id="rtx-a6000",
                   price_per_hour_usd=0.69)
    other = offer(provider="mi", instance_type="4x_MI300X", region="x", gpu_id="mi300x", gpu_count=4,
                  price_per_hour_usd=9.96)
    got = cheapest_setups(a, "q4_k_m", [*same, dearer], top=3)
    # five regions at $0.49 are one setup; SE's $0.69 is another price, so another setup
    assert [(s.price_per_hour, s.region, s.regions) for s in got] == [(0.49, "CA", list(regions)), (0.69, "SE", ["SE"])]
    by_region = cheapest_setups(a, "q4_k_m", [*same, dearer], top=3, by_region=True)
    assert [s.region for s in by_region] == ["CA", "CZ", "IS"]
    # the overall list keeps them apart by configuration, never by region
    mixed = [*cheapest_setups(a, "q4_k_m", [*same, other], top=5), *cheapest_setups(a, "fp8", [*same, other], top=5)]
    rows = overall(mixed)
    assert len({(s.provider, s.instance_type, s.price_per_hour) for s in rows}) == len(rows)


def test_standard_loads_follow_the_models_maximum_context() -> None:
    def labels(max_context: int | None) -> list[str]:
        return [load.label for load in standard_loads(max_context)]

    assert labels(40960) == ["8K x 1", "32K x 8", "max 40K x 1"]  # Qwen3: no 128K without rope scaling
    assert labels(131072) == ["8K x 1", "32K x 8", "128K x 1"]  # the maximum is the 128K load
    assert labels(1048576) == ["8K x 1", "32K x 8", "128K x 1", "max 1M x 1"]
    assert labels(16384) == ["8K x 1", "max 16K x 1"]  # phi-4: 32K is beyond it
    assert labels(None) == ["8K x 1", "32K x 8", "128K x 1"]


def test_per_token_ranks_a_dearer_but_faster_setup_first() -> None:
    a = MODELS["llama70"]
    # four cheap slow cards against one dear fast one: by price the cards win, by cost per token the H200
    cards = offer(provider="cheap", instance_type="4x_A4000", gpu_id="rtx-a4000", gpu_count=4, price_per_hour_usd=0.6)
    h200 = offer(provider="fast", instance_type="1x_H200", gpu_id="h200", price_per_hour_usd=3.0)
    by_price = cheapest_setups(a, "q4_k_m", [cards, h200], top=2) + cheapest_setups(a, "awq_int4", [cards, h200],
                                                                                     top=2)
    by_token = [*cheapest_setups(a, "q4_k_m", [cards, h200], top=2, sort="per_token"),
                *cheapest_setups(a, "awq_int4", [cards, h200], top=2, sort="per_token")]
    assert overall(by_price)[0].provider == "cheap"
    first = overall(by_token, sort="per_token")[0]
    assert first.provider == "fast"
    slow = next(s for s in by_token if s.provider == "cheap")
    assert first.usd_per_million_tokens_at_load < slow.usd_per_million_tokens_at_load


def test_an_engine_asked_for_plans_every_gpu_with_it() -> None:
    a = MODELS["llama8"]
    card = offer(provider="c", instance_type="1x4090", gpu_id="rtx-4090", price_per_hour_usd=0.4)
    [default] = cheapest_setups(a, "bf16", [card])
    assert default.engine == "llama.cpp"  # consumer GPUs default to llama.cpp
    [vllm] = cheapest_setups(a, "bf16", [card], planner=Planner(a, "bf16", 8192, 1, "bf16", engine="vllm"))
    assert vllm.engine == "vllm"


def test_one_search_over_formats_equals_the_overall_of_every_format(published: dict) -> None:
    """Several formats in one search (the lists of other loads, `cheapest` without --format) answer each rented
    configuration in its most faithful format: what `overall` makes of every format's full ranking."""
    from pipeline.compute.answers import FIDELITY

    con = duckdb.connect(str(published["db"]), read_only=True)
    offers = [o for o in eligible_offers(con) if o["gpu_id"] is not None]
    con.close()
    for a in (MODELS["llama70"], MODELS["dsv3"]):
        for context, concurrency in ((8192, 1), (32768, 8)):
            for sort in ("price", "per_token"):
                every = [s for f in FIDELITY for s in cheapest_setups(a, f, offers, context=context,
                                                                      concurrency=concurrency, top=10**9, sort=sort)]
                expected = overall(every, top=5, sort=sort, allow_rpc=True)  # the raw ranking: RPC chains by price
                got = cheapest_setups(a, FIDELITY, offers, context=context, concurrency=concurrency, top=5, sort=sort)
                def shape(rows: list) -> list[tuple]:
                    return [(s.provider, s.instance_type, s.instances, s.price_per_hour, s.format) for s in rows]
                if sort == "price":
                    assert shape(got) == shape(expected)
                else:  # near-equal costs may swap: the rounded published figure breaks ties in `overall`
                    assert set(shape(got)) == set(shape(expected)) or [
                        round(s.usd_per_million_tokens_at_load, 2) for s in got] == [
                        round(s.usd_per_million_tokens_at_load, 2) for s in expected]


def test_every_published_setup_serves_its_load_as_the_engine_would(published: dict) -> None:
    """The engine model pages the KV pool with its own working memory: a plan the planner's budget holds may
    leave the engine room for fewer requests than the load. Setups move up to the GPUs that serve it (as `fit`
    does), so no published row says it holds fewer requests of its context than it was planned for."""
    con = duckdb.connect(str(published["db"]), read_only=True)
    rows = con.execute("SELECT model_id, context, concurrency, gpu_id, gpus_needed, max_concurrent_requests "
                       "FROM cheapest_setups WHERE max_concurrent_requests IS NOT NULL").fetchall()
    con.close()
    assert any(r[2] > 1 for r in rows)
    assert [r for r in rows if r[5] < r[2]] == []


#: GPUs of each memory class and engine, for the step floors' checks
FLOOR_GPUS = ("h100", "a100-80gb-pcie", "mi300x", "rtx-4090", "l40s", "mac-m3-ultra-512")


def floor_cases():  # type: ignore[no-untyped-def]
    """(model, format, its active weight bytes, GPU, engine) of every bundled config in four formats on
    :data:`FLOOR_GPUS`, with the GPU's default engine and llama.cpp: what the step floors are checked on."""
    from helpers import all_config_names

    from pipeline.compute.rates import weight_bytes
    from sizing_core.engines import ENGINES, default_engine
    from sizing_core.gpus import catalog

    gpus = [catalog()[g] for g in FLOOR_GPUS]
    for name in all_config_names():
        a = arch(name)
        for fmt in ("native", "fp8", "q4_k_m", "mxfp4"):
            active = weight_bytes(a, fmt)[1]
            for gpu in gpus:
                for engine in {default_engine(gpu), ENGINES["llama.cpp"]}:
                    yield a, fmt, active, gpu, engine


def layouts(a):  # type: ignore[no-untyped-def]
    """(TP, PP, nodes) of every valid TP up to 8, PP 1-2, one and two machines."""
    from sizing_core.placement.search import valid_tensor_parallel

    for tp in (t for t in (1, 2, 4, 8) if valid_tensor_parallel(a, t)):
        for pp, nodes in ((1, 1), (2, 1), (2, 2)):
            yield tp, pp, nodes


def test_no_layout_decodes_faster_than_the_step_floor_the_search_ranks_by() -> None:
    """The per-token pruning is exact only if every layout's decode step takes at least spread / TP + fixed
    (``engines.speed.decode_step_floor`` of the active weights, ``rates.weight_bytes``): checked on every bundled
    config at two loads, four formats, GPUs of each memory class and engine, every valid TP up to 8, PP 1-2, one and
    two nodes. And the floor is tight where nothing else costs: a dense model at one request on one GPU decodes no
    slower than the floor by more than its embedding row and compute (< 0.5 %)."""
    from pipeline.compute.rates import weight_bytes
    from sizing_core.engines import ENGINES
    from sizing_core.engines.speed import decode_step, decode_step_floor
    from sizing_core.gpus import catalog

    checked = 0
    for a, fmt, active, gpu, engine in floor_cases():
        for context, batch in ((8192, 1), (32768, 8)):
            floor = decode_step_floor(a, gpu, engine, active, context, batch)
            assert floor is not None
            spread, fixed = floor
            for tp, pp, nodes in layouts(a):
                step = decode_step(a, gpu, engine, fmt, tp, pp, context, batch, nodes=nodes)
                assert step is not None
                assert step.total_ms >= (spread / tp + fixed) * (1 - 1e-9), (a.model_type, fmt, gpu.id, tp)
                checked += 1
    assert checked > 5000
    llama = arch("meta-llama__Llama-3.1-8B")
    h100, vllm = catalog()["h100"], ENGINES["vllm"]
    spread, fixed = decode_step_floor(llama, h100, vllm, weight_bytes(llama, "bf16")[1], 8192, 1)
    step = decode_step(llama, h100, vllm, "bf16", 1, 1, 8192, 1)
    assert spread + fixed <= step.total_ms <= (spread + fixed) * 1.005


def test_no_layout_steps_faster_at_a_load_than_the_floor_screen_says() -> None:
    """The default floor's group screen (``service_setups.group_screen``) drops a group only if no layout of it
    can decode fast enough per user, by ``serving.step.least_step_ms``: so no step at a load (``StepModel``, one
    request or a batch, holding the prompt or more) may be faster than it, on any TP up to the instance's GPUs, PP
    1-2, one or two machines, any format with at least the active weights given. Checked on every bundled config,
    four formats, GPUs of each memory class, the GPU's engine and llama.cpp."""
    from pipeline.compute.rates import weight_bytes
    from sizing_core.engines import ENGINES
    from sizing_core.gpus import catalog
    from sizing_core.serving.step import StepModel, least_step_ms

    checked = 0
    for a, fmt, active, gpu, engine in floor_cases():
        least = least_step_ms(a, gpu, engine, active, 7680, 8)
        assert least is not None and least > 0
        for tp, pp, nodes in layouts(a):
            model = StepModel(a, gpu, engine, fmt, tp, pp, nodes=nodes)
            for batch, held in ((1.0, 7680), (8.0, 8192)):
                step = model.step(batch, held).total_ms
                assert step >= least * (1 - 1e-9), (a.model_type, fmt, gpu.id, engine.id, tp, pp, batch)
                checked += 1
    assert checked > 10000
    # and it is tight where nothing else costs: a dense model, one request, one GPU, no compute-bound part
    llama, h100, vllm = arch("meta-llama__Llama-3.1-8B"), catalog()["h100"], ENGINES["vllm"]
    step = StepModel(llama, h100, vllm, "bf16", 1, 1).step(1.0, 1024).total_ms
    least = least_step_ms(llama, h100, vllm, weight_bytes(llama, "bf16")[1], 1024, 1)
    assert least <= step <= least * 1.05


def test_the_floor_screen_drops_only_groups_that_cannot_meet_it() -> None:
    """``service_setups.group_screen`` at the default floor (TTFT p90 2 s, 10 tokens/s per user) on the standard 8K
    x 1 workload. By hand, whatever the bandwidth efficiency (at most 1): Llama-3.1-70B in BF16 reads 2 bytes x ~70
    B active parameters = ~140 GB a step; one L4 (300 GB/s) takes at least 140 / 300 = 0.47 s a token (2 tokens/s):
    dropped. Llama-3.1-8B (~16 GB) on one H100 (3,350 GB/s): a step of ~5 ms at full bandwidth, so even at a fifth
    of it 50 tokens/s: kept. An RTX 3060 has a bandwidth figure but no tensor-core rate, so its TTFT cannot be
    judged against the floor's bound: dropped; under a level without a TTFT bound it is kept for the 8B model
    (16 GB / 360 GB/s = 44 ms: well under the 100 ms a token the level allows, at any efficiency above a half)."""
    from pipeline.compute.rates import weight_bytes
    from pipeline.compute.service_setups import group_screen
    from sizing_core.engines import default_engine
    from sizing_core.gpus import catalog
    from sizing_core.serving.service_level import DEFAULT_FLOOR, ServiceLevel, standard_workload

    g = catalog()
    load = standard_workload(8192, 1)
    big, small = arch("meta-llama__Llama-3.1-70B"), arch("meta-llama__Llama-3.1-8B")
    assert weight_bytes(big, "bf16")[1] > 130e9 and weight_bytes(small, "bf16")[1] < 17e9  # the sizes used above
    assert not group_screen(big, DEFAULT_FLOOR, load, ("bf16",), default_engine)(g["l4"], 1)
    assert group_screen(small, DEFAULT_FLOOR, load, ("bf16",), default_engine)(g["h100"], 1)
    assert not group_screen(small, DEFAULT_FLOOR, load, ("bf16",), default_engine)(g["rtx-3060-12gb"], 1)
    rate_only = ServiceLevel(min_tokens_per_s=10.0)
    assert group_screen(small, rate_only, load, ("bf16",), default_engine)(g["rtx-3060-12gb"], 1)
