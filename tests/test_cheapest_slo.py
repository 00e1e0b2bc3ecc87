"""``vramlab cheapest`` at a service level: setups served at a load (``sizing_core.serving``, the call ``fit
--rate`` makes), kept when they meet the level, in price order; the default interactive floor; ``--no-slo``;
llama.cpp RPC chains after every other setup unless ``--allow-rpc``; the published ``atDefaultFloor`` lists."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli_newcomer import write_snapshot
from test_cli_size import vramlab

from pipeline.compute.answers import FIDELITY  # most to least faithful, 4-bit and above
from sizing_core.serving.service_level import DEFAULT_FLOOR

OFFERS = [
    {"provider": "alpha", "instance_type": "a-a4000", "region": "us-east-1", "gpu_id": "rtx-a4000", "gpu_count": 1,
     "price_per_hour_usd": 0.15, "allocation": "on_demand"},
    {"provider": "beta", "instance_type": "b-a30", "region": "eu-west-1", "gpu_id": "a30", "gpu_count": 1,
     "price_per_hour_usd": 0.29, "allocation": "on_demand"},
    {"provider": "gamma", "instance_type": "g-h100", "region": "us-west-2", "gpu_id": "h100", "gpu_count": 1,
     "price_per_hour_usd": 1.29, "allocation": "on_demand"},
    # a 70B model in Q4_K_M needs two 24 GB cards: two 1-GPU machines (a llama.cpp RPC chain, $0.80/h) or one
    # 2-GPU box 37 % dearer (above the 1.25x multi-machine factor, so by price alone the chain ranks first)
    {"provider": "delta", "instance_type": "d-4090", "region": "us-east-1", "gpu_id": "rtx-4090", "gpu_count": 1,
     "price_per_hour_usd": 0.40, "allocation": "on_demand"},
    {"provider": "delta", "instance_type": "d-4090x2", "region": "us-east-1", "gpu_id": "rtx-4090", "gpu_count": 2,
     "price_per_hour_usd": 1.10, "allocation": "on_demand"},
]
LOAD = ("--rate", "2", "--input-tokens", "1000", "--output-tokens", "200")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("slo")
    write_snapshot(tmp, OFFERS)
    return tmp


def cheapest(data_dir: Path, *args: str) -> dict:
    out = vramlab("cheapest", *args, "--json", "--data-dir", str(data_dir))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def ident(s: dict) -> tuple:
    return (s["provider"], s["instance_type"], s["instances"], s["price_per_hour"], s["format"])


def misses_floor(serving: dict) -> bool:
    return (serving["saturated"] or serving["ttftMsP90"] > DEFAULT_FLOOR.ttft_ms_p90
            or 1000 / serving["itlMs"] < DEFAULT_FLOOR.min_tokens_per_s)




def expected_at_level(data_dir: Path, meets: object, top: int = 10) -> list[tuple]:
    """By hand from each format's pure price order (``--no-slo --format F``): per rented configuration, cheapest
    first, the most faithful format whose figures meet the level (``meets(serving)``)."""
    rows: dict[tuple, dict[str, dict]] = {}
    for f in FIDELITY:
        out = vramlab("cheapest", "qwen3-8b", *LOAD, "--no-slo", "--single-machine", "--format", f, "--top", "50",
                      "--json", "--data-dir", str(data_dir))
        if out.returncode == 2:  # no setup runs this format here
            continue
        assert out.returncode == 0, out.stderr
        for s in json.loads(out.stdout)["setups"]:
            rows.setdefault(ident(s)[:4], {})[f] = s
    found = []
    for config in sorted(rows, key=lambda c: (c[3], c)):  # by price (no two configurations share one here)
        fmt = next((f for f in FIDELITY if f in rows[config] and meets(rows[config][f]["serving"])), None)  # type: ignore[operator]
        if fmt is not None:
            found.append(ident(rows[config][fmt]))
    return found[:top]


def test_a_setup_missing_the_floor_is_left_out_and_the_next_cheapest_taken(data_dir: Path) -> None:
    plain = cheapest(data_dir, "qwen3-8b", *LOAD, "--no-slo", "--single-machine")
    floor = cheapest(data_dir, "qwen3-8b", *LOAD, "--single-machine")
    prices = [s["price_per_hour"] for s in plain["setups"]]
    assert prices == sorted(prices) and plain["serviceLevel"] is None
    # the expected list, derived from the figures --no-slo reports in every format: per configuration the most
    # faithful format meeting the floor (a configuration whose most faithful format misses it may meet it in a
    # lighter one: delta's RTX 4090 saturates in BF16, 16 GB of weights leaving little KV cache, and meets in Q5_K_M)
    expected = expected_at_level(data_dir, lambda serving: not misses_floor(serving))
    assert misses_floor(plain["setups"][0]["serving"]), "the cheapest setup should miss the floor here"
    assert [ident(s) for s in floor["setups"]] == expected and expected
    assert set(expected) - {ident(s) for s in plain["setups"]}, "a lighter format should answer for some setup"
    assert floor["serviceLevel"] == {"ttftMsP90": 2000.0, "minTokensPerSPerUser": 10.0}
    assert floor["serviceLevelSource"] == "default"
    for s in floor["setups"]:
        assert s["serving"]["meetsLevel"] and s["serving"]["meetsDefaultFloor"] and not s["serving"]["shortfall"]
    first = plain["setups"][0]["serving"]
    assert first["meetsLevel"] is None and not first["meetsDefaultFloor"] and first["shortfall"] == []


def test_an_asked_level_is_applied(data_dir: Path) -> None:
    plain = cheapest(data_dir, "qwen3-8b", *LOAD, "--no-slo", "--single-machine")
    speeds = sorted({round(s["serving"]["tokensPerSPerUser"], 3) for s in plain["setups"]})
    assert len(speeds) >= 2
    bar = (speeds[-1] + speeds[-2]) / 2  # only the fastest setups are above it
    asked = cheapest(data_dir, "qwen3-8b", *LOAD, "--min-tokens-per-s", f"{bar:.3f}", "--ttft-p90", "60000",
                     "--single-machine")
    expected = expected_at_level(data_dir, lambda serving: serving["tokensPerSPerUser"] >= float(f"{bar:.3f}")
                                 and serving["ttftMsP90"] <= 60000 and not serving["saturated"])
    assert [ident(s) for s in asked["setups"]] == expected and expected
    assert asked["serviceLevel"] == {"ttftMsP90": 60000.0, "minTokensPerSPerUser": float(f"{bar:.3f}")}


def test_no_slo_keeps_the_pure_price_order_of_cheapest_without_a_load(data_dir: Path) -> None:
    # today's answer (1 request of 8,192 tokens by price; planned: the filter keeps it off the published rows)
    before = cheapest(data_dir, "qwen3-8b", "--top", "5", "--single-machine")
    assert "load" not in before and "serving" not in before["setups"][0]
    at_load = cheapest(data_dir, "qwen3-8b", *LOAD, "--no-slo", "--top", "5", "--single-machine")
    assert [ident(s) for s in at_load["setups"]] == [ident(s) for s in before["setups"]]


def test_the_serving_figures_and_keys(data_dir: Path) -> None:
    d = cheapest(data_dir, "qwen3-8b", *LOAD, "--top", "2")
    assert d["load"] == {"rate": 2.0, "concurrency": None, "inputTokens": 1000, "outputTokens": 200,
                         "standard": False}
    for key in ("serviceLevel", "serviceLevelSource", "allowRpc", "judged", "model", "snapshot", "setups"):
        assert key in d
    for s in d["setups"]:
        v = s["serving"]
        for key in ("ttftMs", "ttftMsP90", "itlMs", "e2eMs", "maxRate", "saturated", "tokensPerSPerUser",
                    "headroom", "usdPerMillionOutputTokens", "usdPerMillionOutputTokensRange", "meetsLevel",
                    "meetsDefaultFloor", "shortfall"):
            assert key in v
        assert v["tokensPerSPerUser"] == pytest.approx(1000 / v["itlMs"])
        assert v["headroom"] == pytest.approx(v["maxRate"] / 2.0)
        # below saturation the setup serves the arrival rate: 2 req/s x 200 tokens
        assert v["usdPerMillionOutputTokens"] == pytest.approx(s["price_per_hour"] / (2.0 * 200 * 3600) * 1e6,
                                                               rel=1e-6)
        low, high = v["usdPerMillionOutputTokensRange"]
        assert low <= v["usdPerMillionOutputTokens"] + 1e-9 <= high + 2e-9


def test_the_same_call_as_fit(data_dir: Path) -> None:
    d = cheapest(data_dir, "qwen3-8b", *LOAD, "--top", "1", "--single-machine")
    s = d["setups"][0]
    fit = json.loads(vramlab("fit", "qwen3-8b", "--gpu", s["gpu_id"], "--gpus", str(s["gpus"]), "--format",
                             s["format"], *LOAD, "--json").stdout)
    for key in ("ttftMsP90", "itlMs", "maxRate", "e2eMs"):
        assert s["serving"][key] == pytest.approx(fit["serving"][key], rel=1e-9), key


def test_rpc_chains_rank_last_unless_allowed(data_dir: Path) -> None:
    args = ("llama-3.1-70b", "--format", "q4_k_m", "--gpu", "rtx-4090")
    chained = cheapest(data_dir, *args, "--allow-rpc")["setups"]
    assert chained[0]["deployment"] == "llama.cpp-rpc" and chained[0]["price_per_hour"] == pytest.approx(0.80)
    default = cheapest(data_dir, *args)["setups"]
    assert default[0]["deployment"] == "single_machine" and default[0]["instance_type"] == "d-4090x2"
    assert [s["deployment"] for s in default][-1] == "llama.cpp-rpc"  # still listed, after every other setup
    # at a load without a level: the same rule, and --allow-rpc the plain price order
    load = ("--concurrency", "1", "--input-tokens", "1000", "--output-tokens", "100", "--no-slo")
    assert cheapest(data_dir, *args, *load)["setups"][0]["deployment"] == "single_machine"
    assert cheapest(data_dir, *args, *load, "--allow-rpc")["setups"][0]["deployment"] == "llama.cpp-rpc"


def test_a_level_needs_a_load(data_dir: Path) -> None:
    out = vramlab("cheapest", "qwen3-8b", "--ttft-p90", "500", "--data-dir", str(data_dir))
    assert out.returncode != 0 and "service level is asked at a load" in out.stderr
    out = vramlab("cheapest", "qwen3-8b", "--rate", "2", "--data-dir", str(data_dir))
    assert out.returncode != 0 and "--input-tokens" in out.stderr


def test_published_first_setups_meet_the_floor_and_agree_with_the_cli(published: dict) -> None:
    """Every published load answer names setups meeting the default floor or says why none does; no #1 is an RPC
    chain while another setup is listed; and `vramlab cheapest` at the load's standard workload gives the JSON's
    #1 (same rows: the snapshot's floor list)."""
    latest = published["tmp"] / "exports" / "latest"
    agreed = 0
    for path in sorted((latest / "models").glob("*.json")):
        d = json.loads(path.read_text())
        for answer in d.get("cheapestSetupsByLoad") or []:
            floor = answer["atDefaultFloor"]
            assert floor or answer["floorNote"], (path.name, answer["label"])
            for name in ("byPrice", "byCostPerToken", "atDefaultFloor"):
                rows = answer[name]
                if rows and any(r["deployment"] != "llama.cpp-rpc" for r in rows):
                    assert rows[0]["deployment"] != "llama.cpp-rpc", (path.name, answer["label"], name)
                for r in rows:
                    assert "serving" in r
            for r in floor:
                assert r["serving"]["meetsDefaultFloor"]
            if floor and agreed < 2 and answer["concurrency"] > 1:
                w = answer["workload"]
                cli = cheapest(published["tmp"], d["id"], "--context", str(answer["context"]), "--concurrency",
                               str(w["concurrency"]), "--input-tokens", str(w["inputTokens"]), "--output-tokens",
                               str(w["outputTokens"]), "--top", str(len(floor)))
                # as many rows as the floor list holds: read from it (more rows are planned on the offers)
                assert cli["origin"] == "published" and cli["load"]["standard"]
                first = cli["setups"][0]
                assert (first["provider"], first["instanceType"], first["instances"], first["pricePerHour"],
                        first["format"]) == (floor[0]["provider"], floor[0]["instanceType"], floor[0]["instances"],
                                             floor[0]["pricePerHour"], floor[0]["format"])
                assert first["serving"]["ttftMsP90"] == pytest.approx(floor[0]["serving"]["ttftMsP90"])
                # without a level: the published list by price, in its order
                plain = cheapest(published["tmp"], d["id"], "--context", str(answer["context"]), "--concurrency",
                                 str(w["concurrency"]), "--input-tokens", str(w["inputTokens"]),
                                 "--output-tokens", str(w["outputTokens"]), "--no-slo")
                ident4 = [(s["provider"], s["instanceType"], s["pricePerHour"], s["format"]) for s in plain["setups"]]
                # the default 10 rows are planned on the offers: the published 5 first
                assert ident4[:len(answer["byPrice"])] == [(s["provider"], s["instanceType"], s["pricePerHour"],
                                                            s["format"]) for s in answer["byPrice"]]
                agreed += 1
    assert agreed == 2


def test_the_screen_never_drops_a_setup_that_meets_the_level(published: dict) -> None:
    """The lower-bound screen (one decode step, one prefill step) only skips setups that surely miss the level:
    the floor lists are the same with and without it, and every screened setup's full figures miss the level."""
    import duckdb

    from pipeline.compute.answers import FIDELITY, overall
    from pipeline.compute.offer_groups import ON_DEMAND, OfferGroups, eligible_offers
    from pipeline.compute.service_setups import SetupServer, at_service_level, practical_setups
    from pipeline.compute.setups import Planner
    from pipeline.compute.tracked import tracked_models
    from sizing_core.serving.service_level import standard_workload

    con = duckdb.connect(str(published["db"]), read_only=True)
    grouped = OfferGroups(eligible_offers(con), ON_DEMAND)
    con.close()
    archs = {t.entry.id: t.arch for t in tracked_models(published["tmp"]) if t.arch is not None}
    screened = 0
    for model, context, k in (("qwen3-8b", 32768, 8), ("llama-3.1-70b", 8192, 1), ("mixtral-8x7b-v0.1", 32768, 8)):
        arch = archs[model]
        planners = {f: Planner(arch, f, context, k, "bf16") for f in FIDELITY}

        def candidates(n: int, arch=arch, planners=planners, context=context, k=k) -> list:  # noqa: ANN001
            return overall(practical_setups(arch, FIDELITY, grouped, context=context, concurrency=k, top=n,
                                            planner=planners, allow_rpc=True), top=n, allow_rpc=True)

        lists = {}
        for screen in (True, False):
            server = SetupServer(arch, standard_workload(context, k), context)
            kept, _ = at_service_level(server, candidates, DEFAULT_FLOOR, 5, limit=80, screen=screen)
            lists[screen] = [ident(j.setup.model_dump(mode="json", by_alias=False)) for j in kept]
        assert lists[True] == lists[False], model
        full = SetupServer(arch, standard_workload(context, k), context)
        for s in candidates(80):
            if full.bound_shortfall(s, DEFAULT_FLOOR):
                screened += 1
                assert not full.judge(s, DEFAULT_FLOOR).meets, (model, s.gpu, s.format)
    assert screened > 0
