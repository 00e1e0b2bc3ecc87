"""The seven everyday questions a new user asked after the README's run command, one command each, on a
replay run's snapshot. Three of the models are not tracked (Qwen/Qwen3-235B-A22B, meta-llama/Llama-3.3-70B-Instruct,
openai/gpt-oss-120b): they are looked up through the Hub source's client, answered offline by the replay bundle's
recordings (pipeline/replay/hub/lookups/SOURCES.md). Expected values are derived by hand from the configs and the
snapshot's own files (DuckDB SQL written here), never copied from the command's output."""

from __future__ import annotations

import json
import math
from datetime import date
from pathlib import Path

import duckdb
import pytest
from test_cli_size import vramlab

ROOT = Path(__file__).resolve().parent.parent
LOOKUPS = ROOT / "pipeline" / "replay" / "hub" / "lookups"


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's run (offline replay) into a fresh data directory."""
    tmp = tmp_path_factory.mktemp("questions")
    out = vramlab("run", "--ephemeral", "--quiet", "--data-dir", str(tmp), timeout=2400)
    assert out.returncode == 0, (out.stdout[-2000:], out.stderr[-2000:])
    return tmp


def ask(data: Path, *args: str) -> dict | list:
    out = vramlab(*args, "--json", "--data-dir", str(data))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def table(data: Path, *args: str) -> str:
    out = vramlab(*args, "--data-dir", str(data))
    assert out.returncode == 0, out.stderr
    assert max(len(line) for line in out.stdout.splitlines()) <= 100, out.stdout  # fits 100 columns
    return out.stdout


def snapshot(data: Path) -> Path:
    return (data / "exports" / "latest").resolve()


# 1 --------------------------------------------------------------------------------------------------------------

def test_q1_how_much_memory_does_an_untracked_model_need(data: Path) -> None:
    """`vramlab size Qwen/Qwen3-235B-A22B`: not tracked, so looked up (offline: the replay bundle's recording)."""
    got = ask(data, "size", "Qwen/Qwen3-235B-A22B", "--contexts", "32k")
    config = json.loads((LOOKUPS / "Qwen__Qwen3-235B-A22B.json").read_text())
    # KV cache per token (BF16): 94 layers x 2 (K, V) x 4 KV heads x 128 dims x 2 bytes = 192,512 bytes
    per_token = config["num_hidden_layers"] * 2 * config["num_key_value_heads"] * config["head_dim"] * 2
    assert per_token == 192_512 == got["kvCacheBytesPerToken"]["bf16"]
    assert got["kvCacheGiBPerRequest"][0]["bf16"] == round(per_token * 32768 / 2**30, 3)  # 5.875 GiB at 32K
    # weights: 235 B parameters in BF16 (2 bytes each) are about 438 GiB; about half of that in FP8
    assert 234 < got["parameters"] < 236 and 21 < got["activeParameters"] < 23
    assert got["weightsGiB"]["bf16"] == pytest.approx(got["parameterCounts"]["total"] * 2 / 2**30, rel=0.01)
    assert got["contextLimit"]["maxContext"] == 40960  # max_position_embeddings; no rope_scaling in the config
    # the look-up was kept in the data directory: asked again, no fetch is needed
    assert (data / "cache" / "hub-lookups" / "hub" / "state.json").is_file()
    # a repo the Hub (offline: the bundle) does not have: one line saying how to get an answer
    missing = vramlab("size", "Qwen/Qwen9-1T", "--data-dir", str(data))
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
    assert "config.json" in missing.stderr and "VRAMLAB_LIVE=1" in missing.stderr


# 2 --------------------------------------------------------------------------------------------------------------

def test_q2_cheapest_way_to_serve_8_users_at_32k_on_one_machine(data: Path) -> None:
    """`vramlab cheapest meta-llama/Llama-3.3-70B-Instruct --context 32k --concurrency 8 --single-machine`."""
    got = ask(data, "cheapest", "meta-llama/Llama-3.3-70B-Instruct", "--context", "32k", "--concurrency", "8",
              "--single-machine", "--top", "5")
    setups = got["setups"]
    assert (got["context"], got["concurrency"], got["list"]) == (32768, 8, "on_demand") and setups
    for s in setups:
        assert s["instances"] == 1 and s["allocation"] == "on_demand"
        assert s["max_concurrent_requests"] >= 8  # the plan holds 8 requests of 32K tokens
        # $/1M output tokens at the load = $/h / (8 requests x tok/s each x 3600 s) x 10^6 (tok/s is published to
        # 2 decimals: a few tok/s carry up to 0.5 % of rounding)
        assert s["usd_per_million_tokens_at_load"] == pytest.approx(
            s["price_per_hour"] / (8 * s["tokens_per_s_per_request"] * 3600) * 1e6, rel=5e-3)
    prices = [s["price_per_hour"] for s in setups]
    assert prices == sorted(prices)  # cheapest first (all one machine: no multi-machine factor)
    # each setup holds the load by hand: 8 requests x 32,768 tokens x 327,680 bytes of BF16 KV cache per token
    # (80 layers x 2 x 8 KV heads x 128 dims x 2 bytes) = 80 GiB, plus the weights in its format, within the GPUs'
    # usable memory (the catalog's, per GPU)
    config = json.loads((LOOKUPS / "meta-llama__Llama-3.3-70B-Instruct.json").read_text())
    per_token = config["num_hidden_layers"] * 2 * config["num_key_value_heads"] * 128 * 2
    kv = 8 * 32768 * per_token / 2**30
    assert per_token == 327_680 and kv == 80.0
    weights = ask(data, "size", "meta-llama/Llama-3.3-70B-Instruct", "--contexts", "8k")["weightsGiB"]
    usable = {g["id"]: g["usable_memory_gib"] for g in ask(data, "gpus", "--catalog")}
    for s in setups:
        assert s["gpus_needed"] * usable[s["gpu_id"]] >= kv + weights[s["format"]], s
    text = table(data, "cheapest", "meta-llama/Llama-3.3-70B-Instruct", "--context", "32k", "--concurrency", "8",
                 "--single-machine")
    assert "8 request(s) of 32,768 tokens" in " ".join(text.split())


# 3 --------------------------------------------------------------------------------------------------------------

def test_q3_top_setups_are_distinct_and_ranked_by_cost_per_token_too(data: Path) -> None:
    """`vramlab cheapest deepseek-v3 --top 3` gave three identical RunPod rows; `--sort per-token` ranks by
    $/1M output tokens (4x MI300X at a fifth of the cost per token was row 8 of 40)."""
    by_price = ask(data, "cheapest", "deepseek-v3", "--top", "3")["setups"]
    by_token = ask(data, "cheapest", "deepseek-v3", "--top", "3", "--sort", "per-token")["setups"]
    for rows in (by_price, by_token):
        assert len(rows) == 3
        assert len({(r["provider"], r["instance_type"], r["price_per_hour"]) for r in rows}) == 3  # distinct
        assert all(r["region"] in (r["regions"] or [r["region"]]) for r in rows)
    costs = [r["usd_per_million_tokens_at_load"] * (1.25 if r["nodes"] > 1 else 1) for r in by_token]
    assert costs == sorted(costs)
    # the cheapest per token costs less per token than the cheapest per hour
    assert by_token[0]["usd_per_million_tokens_at_load"] < by_price[0]["usd_per_million_tokens_at_load"]
    # and the published lists hold no two rows that differ only by region
    for path in (snapshot(data) / "models").glob("*.json"):
        model = json.loads(path.read_text())
        lists = [model["cheapestSetups"], model["spotSetups"], *[a[k] for a in model["cheapestSetupsByLoad"]
                                                               for k in ("byPrice", "byCostPerToken")]]
        for rows in lists:
            keys = [(r["provider"], r["instanceType"], r["instances"], r["pricePerHour"], r["format"]) for r in rows]
            assert len(keys) == len(set(keys)), (path.name, keys)


# 4 --------------------------------------------------------------------------------------------------------------

def test_q4_what_did_h100_prices_do(data: Path) -> None:
    """`vramlab history H100`: per day and provider the cheapest eligible $/GPU-hour, every H100 variant."""
    got = ask(data, "history", "H100")
    assert set(got["gpus"]) == {"h100", "h100-pcie", "h100-nvl"}
    rows = got["rows"]
    days = sorted({r["day"] for r in rows})
    assert days[0] < days[-1]  # more than one day
    # by hand: the snapshot's observations of eligible whole-GPU on-demand H100s (offers, and the gpu-price-feed's
    # records of on-demand prices), the cheapest per day (eligible as stamped when observed; older rows without
    # the stamp: not quarantined and no duplicate today)
    snap = snapshot(data)
    con = duckdb.connect()
    want = dict(con.execute("""
        SELECT (h.observed_at AT TIME ZONE 'UTC')::DATE::VARCHAR, round(min(h.price_per_gpu_hour_usd), 4)
        FROM read_parquet(?) h LEFT JOIN read_parquet(?) o USING (offer_key)
        WHERE h.gpu_id IN ('h100', 'h100-pcie', 'h100-nvl') AND h.allocation IN ('on_demand', 'reference_on_demand')
          AND NOT h.fractional AND coalesce(h.eligible, o.offer_key IS NULL OR (NOT coalesce(o.quarantined, false)
                                                            AND o.duplicate_of IS NULL)) GROUP BY 1""", [[str(p) for p in (snap / "price_observations").glob(
        "*/*.parquet")], str(snap / "offers_current.parquet")]).fetchall())
    assert {d["day"]: d["cheapest"] for d in got["byDay"]} == want
    # Lambda's own API priced the H100 PCIe at $3.29/GPU-h on 2026-07-30 (shared/reference/prices/NOTES.md)
    lambda_api = next(r for r in rows if r["day"] == "2026-07-30" and r["provider"] == "lambda")
    assert (lambda_api["gpu_id"], lambda_api["price"]) == ("h100-pcie", 3.29)
    text = table(data, "history", "H100")
    assert "h100-pcie" in text and "*" in text


# 5 --------------------------------------------------------------------------------------------------------------

def test_q5_h100_means_every_variant_and_gpu_n_is_taken(data: Path) -> None:
    """`vramlab gpus H100` left out the $1.90 H100 PCIe; `fit --gpu H100:2` was refused."""
    offers = ask(data, "gpus", "H100")
    assert {o["gpu_id"] for o in offers} == {"h100", "h100-pcie", "h100-nvl"}
    assert any(o["gpu_id"] == "h100-pcie" and o["price_per_gpu_hour_usd"] == 1.90 for o in offers)
    assert {o["gpu_id"] for o in ask(data, "gpus", "h100-sxm")} == {"h100"}  # an alias stays exact
    text = table(data, "gpus", "H100")
    assert "H100 matches 3 GPUs" in " ".join(text.split())
    fit = ask(data, "fit", "qwen3-8b", "--gpu", "H100:2", "--format", "bf16")
    # Qwen3-8B in BF16 fits one H100 (16.4 GiB), asked for two: TP 2 over both, 32 heads / 2
    assert (fit["gpus"], fit["fewestGpus"], fit["gpusAsked"], fit["plan"]["tensorParallel"]) == (2, 1, 2, 2)
    assert fit["cost"]["offer"] is None or fit["cost"]["offer"]["gpusUsed"] == 2


# 6 --------------------------------------------------------------------------------------------------------------

def test_q6_gpt_oss_120b_on_one_rtx_4090(data: Path) -> None:
    """`vramlab fit openai/gpt-oss-120b --gpu rtx-4090 --offload`: '3 GPUs' was the only answer."""
    whole = ask(data, "fit", "openai/gpt-oss-120b", "--gpu", "rtx-4090", "--format", "native")
    assert whole["gpus"] > 1  # ~61 GiB of MXFP4 weights do not fit one 24 GB card
    got = ask(data, "fit", "openai/gpt-oss-120b", "--gpu", "rtx-4090", "--offload")["offload"]
    assert got["fits"] and got["mode"] == "experts" and got["engine"] == "llama.cpp"
    assert 0 < got["cpuMoeLayers"] <= 36 and f"--n-cpu-moe {got['cpuMoeLayers']}" in got["command"]
    assert got["vramGiB"] <= got["budgetGiB"] < 24
    # the experts left in RAM: 36 layers x 128 experts x 3 matrices of 2,880 x 2,880 (gate, up, down) in MXFP4
    # (4.25 bits per weight: 4-bit values plus an 8-bit scale per 32) = 56.8 GiB for all layers
    all_experts = 36 * 128 * 3 * 2880 * 2880 * 4.25 / 8 / 2**30
    assert got["ramGiB"] == pytest.approx(all_experts * got["cpuMoeLayers"] / 36, rel=0.02)
    assert got["systemRamNeededGiB"] >= math.ceil(got["ramGiB"])
    assert got["decodeTokensPerS"] > 5  # 4 of 128 experts per token: the CPU's share stays small


# 7 --------------------------------------------------------------------------------------------------------------

def test_q7_qwen3_at_128k_with_yarn(data: Path) -> None:
    """`size` answered 128K with an asterisk while `fit` refused; YaRN, Qwen's documented way to 128K, was never
    considered."""
    size = ask(data, "size", "qwen3-8b", "--contexts", "128k", "--rope-scaling", "yarn:4:32k")
    fit = ask(data, "fit", "qwen3-8b", "--gpu", "h100", "--format", "bf16", "--context", "128k", "--rope-scaling",
              "yarn:4:32k")
    # YaRN x4 over 32,768 positions (Qwen3's model card) = 131,072 tokens
    assert size["contextLimit"]["extendedMaxContext"] == fit["contextLimit"]["extendedMaxContext"] == 4 * 32768
    assert size["kvCacheGiBPerRequest"][0]["withinExtendedMaxContext"] and not fit["aboveMaxContext"]
    assert fit["memoryPerGpuGiB"]["kvCache"] == pytest.approx(size["kvCacheGiBPerRequest"][0]["bf16"], abs=0.01)
    assert "--rope-scaling" in fit["launch"]["command"] and "--max-model-len 131072" in fit["launch"]["command"]
    plain = ask(data, "fit", "qwen3-8b", "--gpu", "h100", "--format", "bf16", "--context", "128k")
    assert plain["aboveMaxContext"] and plain["fits"]  # answered, and said to be above 40,960


# shared by the GPU-first questions below ------------------------------------------------------------------------

CONFIGS = ROOT / "pipeline" / "replay" / "hub" / "configs"
GPU_CSV = ROOT / "sizing_core" / "data" / "gpus.csv"
INTERCONNECT_CSV = ROOT / "pipeline" / "sources" / "data" / "interconnect.csv"
#: the formats the GPU-first answers search, most faithful first (docs/cli.md, `models --fits`)
FIDELITY = ("native", "bf16", "fp8", "int8", "q8_0", "q6_k", "q5_k_m", "awq_int4", "nvfp4", "q4_k_m", "mxfp4",
            "iq4_xs")


def qwen3_8b_bf16_gib() -> float:
    """Qwen3-8B's BF16 weights by hand from its config: embeddings and an untied LM head, per layer the attention
    projections (Q and O 4,096 x 32 x 128; K and V 4,096 x 8 x 128), the SwiGLU MLP (3 x 4,096 x 12,288), two
    RMSNorms and the Q/K norms (128 each), and the final norm: 8,190,735,360 parameters x 2 bytes."""
    c = json.loads((CONFIGS / "Qwen__Qwen3-8B.json").read_text())
    h, d, layers = c["hidden_size"], c["head_dim"], c["num_hidden_layers"]
    attention = 2 * h * c["num_attention_heads"] * d + 2 * h * c["num_key_value_heads"] * d
    per_layer = attention + 3 * h * c["intermediate_size"] + 2 * h + 2 * d
    total = 2 * c["vocab_size"] * h + layers * per_layer + h
    assert total == 8_190_735_360 and not c["tie_word_embeddings"]
    return total * 2 / 2**30


def offers_sql(data: Path, sql: str, *params: object) -> list[tuple]:
    """DuckDB over the snapshot's offers (``o``: offers_current.parquet, rentable = its ``eligible`` column)."""
    con = duckdb.connect()
    path = str(snapshot(data) / "offers_current.parquet").replace("'", "''")
    con.execute(f"CREATE VIEW o AS SELECT * FROM read_parquet('{path}')")
    return con.execute(sql, list(params)).fetchall()


def cheapest_offer(data: Path, gpu_id: str) -> float:
    """The cheapest eligible on-demand instance of a GPU: what a one-GPU plan rents (any instance size runs it)."""
    return offers_sql(data, "SELECT min(price_per_hour_usd) FROM o WHERE eligible AND allocation = 'on_demand' "
                            "AND gpu_id = ?", gpu_id)[0][0]


# 8 --------------------------------------------------------------------------------------------------------------

def test_q8_which_models_run_on_one_h100(data: Path) -> None:
    """`vramlab models --fits h100`: which tracked and bundled models run on the GPU I have (it took 43 `fit`
    calls and a script), in which format, how fast and at what price."""
    got = ask(data, "models", "--fits", "h100")
    assert (got["gpu"], got["maxGpus"], got["context"]) == ("h100", 1, 8192)
    models = {m["id"]: m for m in got["models"]}
    tracked = [m["id"] for m in json.loads((ROOT / "pipeline" / "data" / "watchlist.json").read_text())["models"]]
    assert set(tracked) <= set(models)  # every tracked model is answered (then the bundled registry's)
    runs = [m for m in got["models"] if m["fits"]]
    assert got["fits"] == len(runs) and got["models"][: len(runs)] == runs  # those that run first
    # highest-fidelity format first (then the largest), and each model's formats most faithful first
    assert [FIDELITY.index(m["format"]) for m in runs] == sorted(FIDELITY.index(m["format"]) for m in runs)
    for m in runs:
        assert m["gpus"] == 1 and m["memoryPerGpuGiB"] <= m["usableGiBPerGpu"]
        assert [f["format"] for f in m["formats"]][0] == m["format"]
        assert [FIDELITY.index(f["format"]) for f in m["formats"]] == sorted(FIDELITY.index(f["format"])
                                                                             for f in m["formats"])
    # Qwen3-8B: 15.26 GiB of BF16 weights (by hand from its config) hold on one 80 GB H100 in its own format,
    # rented at the cheapest H100 instance of the snapshot, its $/1M tokens at its decode rate
    qwen = models["qwen3-8b"]
    assert (qwen["fits"], qwen["format"], qwen["weightFormat"]) == (True, "native", "bf16")
    assert qwen["weightsGiBPerGpu"] == pytest.approx(qwen3_8b_bf16_gib(), rel=1e-6)
    assert qwen["pricePerHour"] == cheapest_offer(data, "h100")
    assert qwen["usdPerMillionTokens"] == pytest.approx(
        qwen["pricePerHour"] / (qwen["decodeTokensPerS"] * 3600) * 1e6, rel=1e-3)
    assert qwen["verifiedAt"][:10] == str(offers_sql(
        data, "SELECT min(verified_at)::DATE FROM o WHERE eligible AND allocation = 'on_demand' AND gpu_id = 'h100' "
              "AND price_per_hour_usd = ?", qwen["pricePerHour"])[0][0])
    # DeepSeek-V3's 671 B parameters are over 312 GiB even at 4 bits per weight: not on one 80 GB card, and at
    # least ceil(312 / 80) = 4 of them
    c = json.loads((CONFIGS / "deepseek-ai__DeepSeek-V3.json").read_text())
    assert c["n_routed_experts"] == 256
    deepseek = models["deepseek-v3"]
    assert not deepseek["fits"] and deepseek["fewestGpus"] >= math.ceil(671e9 * 0.5 / 2**30 / 80)
    text = table(data, "models", "--fits", "h100")
    assert "qwen3-8b" in text and "deepseek-v3 (" in " ".join(text.split())
    # the report's page of the GPU answers the same question from the published tables (four of the formats):
    # every model it finds on one H100 the command finds too, priced on the cheapest one-GPU H100 instance
    page = (snapshot(data) / "report" / "gpus" / "h100.html").read_text()
    one = page.split('id="runs-on-one"')[1].split("</table>")[0]
    on_page = {chunk.split('"')[0] for chunk in one.split('data-model="')[1:]}
    assert "qwen3-8b" in on_page and on_page <= {m["id"] for m in runs}
    single = offers_sql(data, "SELECT min(price_per_hour_usd) FROM o WHERE eligible AND allocation = 'on_demand' "
                              "AND gpu_id = 'h100' AND gpu_count = 1")[0][0]
    assert f"${single:,.2f}/h" in page
    assert vramlab("models", "--context", "32k", "--data-dir", str(data)).returncode == 2  # a GPU question: --fits
    # at 128K, Qwen3-8B does not run: its config stops at max_position_embeddings = 40,960 tokens (no rope scaling)
    assert json.loads((CONFIGS / "Qwen__Qwen3-8B.json").read_text())["max_position_embeddings"] == 40960
    long = {m["id"]: m for m in ask(data, "models", "--fits", "h100", "--context", "128k")["models"]}
    assert not long["qwen3-8b"]["fits"] and "40,960" in long["qwen3-8b"]["reason"]


# 9 --------------------------------------------------------------------------------------------------------------

def test_q9_the_same_model_on_three_gpus_side_by_side_at_one_load(data: Path) -> None:
    """`vramlab compare qwen3-8b --gpu h100 --gpu l40s --gpu rtx-4090 --rate 2 --input-tokens 1000
    --output-tokens 200`: one model on several GPUs at one load had no command."""
    got = ask(data, "compare", "qwen3-8b", "--gpu", "h100", "--gpu", "l40s", "--gpu", "rtx-4090", "--rate", "2",
              "--input-tokens", "1000", "--output-tokens", "200")
    rows = got["gpus"]
    assert [r["gpu"] for r in rows] == ["h100", "l40s", "rtx-4090"]  # in the order asked
    assert got["load"] == {"rate": 2.0, "concurrency": None, "inputTokens": 1000, "outputTokens": 200}
    kinds = {line.split(",")[0]: line.split(",")[5] for line in GPU_CSV.read_text().splitlines()[1:]}
    weights = qwen3_8b_bf16_gib()
    for r in rows:  # 15.26 GiB of BF16 weights fit each of these cards (24 GB and up): one GPU, its own format
        assert (r["fits"], r["gpus"], r["format"]) == (True, 1, "native")
        assert r["weightsGiBPerGpu"] == pytest.approx(weights, rel=1e-6)
        # vLLM on data-centre GPUs, llama.cpp elsewhere (the catalog's kind column)
        assert r["engine"] == ("vllm" if kinds[r["gpu"]] == "datacenter" else "llama.cpp")
        assert r["pricePerHour"] == cheapest_offer(data, r["gpu"]) and r["verifiedAt"]
        s = r["serving"]
        assert s["rate"] == 2.0
        if not s["saturated"]:  # below saturation every request is served: 2 req/s x 200 tokens = 400 tokens/s
            assert s["outputTokensPerS"] == pytest.approx(400, rel=1e-6)
            assert s["usdPerMillionOutputTokens"] == pytest.approx(r["pricePerHour"] / (400 * 3600) * 1e6, rel=1e-6)
    assert not rows[0]["serving"]["saturated"]  # an H100 keeps up with 400 tokens/s of an 8B model
    # GPU:N answers on exactly N: Qwen3-8B's 32 attention heads split over two H100s
    two = ask(data, "compare", "qwen3-8b", "--gpu", "h100:2", "--gpu", "h100")["gpus"]
    assert [(r["gpus"], r["tensorParallel"], r["gpusAsked"]) for r in two] == [(2, 2, 2), (1, 1, None)]
    # asked above the model's maximum context, answered as `fit` answers it (the memory it would take) and said
    above = ask(data, "compare", "qwen3-8b", "--gpu", "h100", "--context", "128k")
    assert above["aboveMaxContext"] and above["warnings"] and above["gpus"][0]["fits"]
    # KV cache of 131,072 tokens: 36 layers x 2 x 8 KV heads x 128 dims x 2 bytes per token = 18 GiB
    assert above["gpus"][0]["kvCacheGiBPerGpu"] == pytest.approx(36 * 2 * 8 * 128 * 2 * 131072 / 2**30, rel=1e-6)
    text = table(data, "compare", "qwen3-8b", "--gpu", "h100", "--gpu", "l40s", "--gpu", "rtx-4090", "--rate", "2",
                 "--input-tokens", "1000", "--output-tokens", "200")
    assert all(g in text for g in ("h100", "l40s", "rtx-4090", "TTFT p90", "headroom"))


# 10 -------------------------------------------------------------------------------------------------------------

def test_q10_cheapest_single_gpu_with_stated_capacity_and_a_fabric(data: Path) -> None:
    """`vramlab cheapest qwen3-8b --max-gpus 1 --available`: the cheapest single-GPU setup without naming the GPU,
    among offers whose provider said it has capacity; `--fabric` for the machines of a multi-machine plan; the
    instance type, fabric, capacity and $/1M range in the table."""
    got = ask(data, "cheapest", "qwen3-8b", "--max-gpus", "1", "--available", "--top", "5")
    assert (got["filters"]["maxGpus"], got["filters"]["available"]) == (1, True)
    # by hand: every eligible on-demand 1-GPU instance whose source stated capacity, of a GPU with room for the
    # 15.26 GiB of BF16 weights and 1.125 GiB of KV cache (36 layers x 2 x 8 heads x 128 x 2 bytes x 8,192 tokens)
    assert 36 * 2 * 8 * 128 * 2 * 8192 / 2**30 == 1.125
    memory = {line.split(",")[0]: float(line.split(",")[6]) for line in GPU_CSV.read_text().splitlines()[1:]}
    want = offers_sql(data, "SELECT provider, instance_type, price_per_hour_usd, gpu_id FROM o WHERE eligible AND "
                            "allocation = 'on_demand' AND gpu_count = 1 AND availability_status IN ('available', "
                            "'low') GROUP BY ALL ORDER BY price_per_hour_usd, provider, instance_type")
    want = [w[:3] for w in want if memory[w[3]] >= 24][:5]
    assert want and [(s["provider"], s["instance_type"], s["price_per_hour"]) for s in got["setups"]] == want
    assert all(s["gpus"] == 1 and s["availability"].startswith("available") for s in got["setups"])
    # a multi-machine plan only over the fabric asked: DeepSeek-V3 in BF16 for 8 requests of 128K spans machines
    args = ("cheapest", "deepseek-v3", "--context", "128k", "--concurrency", "8", "--format", "bf16", "--top", "8")
    every = ask(data, *args)["setups"]
    infiniband = ask(data, *args, "--fabric", "infiniband")["setups"]
    families = [line.split(",") for line in INTERCONNECT_CSV.read_text().splitlines()[1:]]
    ib_providers = {f[0] for f in families if f[3] == "InfiniBand"}
    assert any(s["nodes"] > 1 and "InfiniBand" not in (s["interconnect"] or "") for s in every)  # others exist
    spanning = [s for s in infiniband if s["nodes"] > 1]
    assert spanning and all("InfiniBand" in s["interconnect"] and s["provider"] in ib_providers
                            and s["deployment"] == "cluster" for s in spanning)
    # --multi-machine with the fabric: only the plans spanning machines, the same spanning rows in the same order
    several = ask(data, *args, "--fabric", "infiniband", "--multi-machine")
    assert several["filters"]["multiMachine"] is True
    row = ("provider", "instance_type", "instances", "format", "price_per_hour")
    assert ([tuple(s[k] for k in row) for s in several["setups"][:len(spanning)]]
            == [tuple(s[k] for k in row) for s in spanning])
    assert all(s["instances"] > 1 and "InfiniBand" in s["interconnect"] for s in several["setups"])
    assert "several machines" in table(data, *args, "--fabric", "infiniband", "--multi-machine")
    both = vramlab("cheapest", "qwen3-8b", "--single-machine", "--multi-machine", "--data-dir", str(data))
    assert both.returncode == 2 and "not allowed with" in both.stderr
    one_line = vramlab("cheapest", "deepseek-v3", "--fabric", "carrier-pigeon", "--data-dir", str(data))
    assert one_line.returncode == 2 and "InfiniBand" in one_line.stderr and len(one_line.stderr.splitlines()) == 1
    text = table(data, *args, "--fabric", "infiniband")
    first = infiniband[0]
    assert first["instance_type"][:10] in text and "IB" in text.split() and "cap" in text
    low, high = first["usd_per_million_tokens_batched_low"], first["usd_per_million_tokens_batched_high"]
    assert f"{low:,.2f}-{high:,.2f}" in text  # the $/1M range, under the figure at the load


# 11 -------------------------------------------------------------------------------------------------------------

def test_q11_which_providers_rent_h100s_under_2_50(data: Path) -> None:
    """`vramlab gpus H100 --max-price 2.5` listed 50 offers (36 of one provider, one per region and size) when the
    question was which providers: one row per provider and GPU now, every offer with `--offers`."""
    got = ask(data, "gpus", "H100", "--max-price", "2.5")
    want = offers_sql(data, "SELECT provider, gpu_id, min(price_per_gpu_hour_usd), count(*), count(DISTINCT region) "
                            "FROM o WHERE eligible AND allocation = 'on_demand' AND gpu_id IN ('h100', 'h100-pcie', "
                            "'h100-nvl') AND price_per_gpu_hour_usd <= 2.5 GROUP BY ALL")
    assert sorted((r["provider"], r["gpu_id"], r["price_per_gpu_hour_usd"], r["offer_count"], r["region_count"])
                  for r in got) == sorted(want)
    assert len(got) < sum(w[3] for w in want)  # fewer rows than offers: the question asked
    prices = [r["price_per_gpu_hour_usd"] for r in got]
    assert prices == sorted(prices)
    assert all(len(r["regions"]) == r["region_count"] for r in got)
    assert {"instance_type", "region", "verified_at", "price_per_hour_usd"} <= set(got[0])  # still an offer row
    offers = ask(data, "gpus", "H100", "--max-price", "2.5", "--offers")
    assert len(offers) == sum(w[3] for w in want)
    text = table(data, "gpus", "H100", "--max-price", "2.5")
    assert "regions" in text and "offers" in text and "--offers" in text


def test_q12_which_providers_does_each_day_of_the_h100_history_have(data: Path) -> None:
    """`vramlab history H100` joined one provider's $12.29 to sixteen providers' $1.29 as if the price had crashed:
    each day now says which providers it has and what changed, and the first and last day are compared over the
    providers both have (like for like)."""
    got = ask(data, "history", "H100")
    # by hand: the eligible whole-GPU on-demand H100 observations of the published history, per UTC day
    files = [str(p) for p in (snapshot(data) / "price_observations").glob("*/*.parquet")]
    con = duckdb.connect()
    per_day = con.execute("""
        SELECT strftime((observed_at AT TIME ZONE 'UTC')::DATE, '%Y-%m-%d') AS day, provider,
               round(min(price_per_gpu_hour_usd), 4)
        FROM read_parquet(?, hive_partitioning = false)
        WHERE gpu_id IN ('h100', 'h100-pcie', 'h100-nvl') AND allocation IN ('on_demand', 'reference_on_demand')
          AND NOT fractional AND coalesce(eligible, false) AND price_per_gpu_hour_usd > 0
        GROUP BY ALL ORDER BY ALL""",
                          [files]).fetchall()
    providers: dict[str, list[str]] = {}
    for day, provider, _ in per_day:
        providers.setdefault(day, []).append(provider)
    days = sorted(providers)
    assert len(days) >= 3
    assert [(d["day"], d["providerList"], d["providers"]) for d in got["byDay"]] == [
        (d, providers[d], len(providers[d])) for d in days]
    for before, d in zip(got["byDay"], got["byDay"][1:], strict=False):
        assert d["added"] == sorted(set(providers[d["day"]]) - set(providers[before["day"]]))
        assert d["removed"] == sorted(set(providers[before["day"]]) - set(providers[d["day"]]))
        assert d["changed"] == (providers[d["day"]] != providers[before["day"]])
    assert got["byDay"][0]["added"] == [] and any(d["changed"] for d in got["byDay"])
    # like for like: the providers of both the first and the last day, and their cheapest on each
    common = sorted(set(providers[days[0]]) & set(providers[days[-1]]))
    # the first day is the gpu-price-feed's 2026-07-23 (2026-07.jsonl line 1: datacrunch = verda, digitalocean,
    # lambdalabs = lambda, runpod, scaleway); of those, all but Scaleway (captured 2026-10-01) have a current
    # recording priced on the snapshot's day
    assert common == ["digitalocean", "lambda", "runpod", "verda"]
    price = {(d, p): v for d, p, v in per_day}
    compared = got["likeForLike"]
    assert compared["providers"] == common
    assert (compared["first"]["day"], compared["first"]["price"]) == (days[0], min(price[days[0], p] for p in common))
    assert (compared["last"]["day"], compared["last"]["price"]) == (days[-1], min(price[days[-1], p] for p in common))
    assert compared["first"]["price"] == 1.99  # 2026-07.jsonl line 1: runpod "H100 80GB PCIe": 1.99
    text = table(data, "history", "H100")
    assert "the providers of each day" in text
    assert "like for like (4 providers on both days: digitalocean, lambda, runpod, verda)" in text
    changed = next(d for d in got["byDay"] if d["changed"])
    assert all(f"+{p}" in text for p in changed["added"]) and all(f"-{p}" in text for p in changed["removed"])


def test_q12b_a_stray_old_record_is_no_baseline_and_gaps_are_said(data: Path) -> None:
    """`vramlab history A100`: the history starts with one Google price of 2023-03-24 (the GCP recording), then the
    daily records from 2026-07-23. The like-for-like line compares the last day with the earliest day sharing a
    provider with it, not with the Google day (which shares none: "no like-for-like change" before); a day after
    days without any price says so."""
    got = ask(data, "history", "A100")
    days = got["byDay"]
    assert (days[0]["day"], days[0]["providerList"]) == ("2023-03-24", ["google"])
    last = set(days[-1]["providerList"])
    assert "google" not in last
    first = next(d for d in days[:-1] if last & set(d["providerList"]))
    assert first["day"] == "2026-07-23"
    compared = got["likeForLike"]
    assert compared["first"]["day"] == first["day"] and compared["last"]["day"] == days[-1]["day"]
    assert compared["providers"] == sorted(last & set(first["providerList"]))
    price = {(r["day"], r["provider"]): r["price"] for r in got["rows"]}
    assert compared["first"]["price"] == min(price[first["day"], p] for p in compared["providers"])
    text = table(data, "history", "A100")
    apart = (date.fromisoformat(days[-1]["day"]) - date.fromisoformat(days[-2]["day"])).days
    assert apart > 1 and f"after {apart - 1} days without a price" in " ".join(text.split())


def test_q13_what_did_running_qwen3_8b_cost_per_day(data: Path) -> None:
    """`vramlab cost-history qwen3-8b`: per day the cheapest on-demand $/h of a setup running one 8K request, over
    the setup shapes the snapshot publishes for that load, priced with each day's observations."""
    got = ask(data, "cost-history", "qwen3-8b")
    snap = snapshot(data)
    files = [str(p) for p in (snap / "price_observations").glob("*/*.parquet")]
    con = duckdb.connect()
    # by hand: the published setups' shapes for 8K x 1, joined to every eligible on-demand observation of an
    # instance of that GPU and size, cost = instance $/h x instances, and to every per-GPU on-demand record of
    # that GPU for a shape of one instance of one GPU; cheapest per UTC day
    want = dict(con.execute("""
        WITH shapes AS (SELECT DISTINCT gpu_id, gpus_per_instance, instances FROM read_parquet(?)
                        WHERE model_id = 'qwen3-8b' AND context = 8192 AND concurrency = 1 AND list = 'on_demand')
        SELECT strftime((h.observed_at AT TIME ZONE 'UTC')::DATE, '%Y-%m-%d'),
               round(min(h.price_per_hour_usd * s.instances), 4)
        FROM read_parquet(?, hive_partitioning = false) h
        JOIN shapes s ON h.gpu_id = s.gpu_id AND h.gpu_count = s.gpus_per_instance
        WHERE (h.allocation = 'on_demand' OR h.allocation = 'reference_on_demand' AND s.gpus_per_instance = 1
               AND s.instances = 1)
          AND coalesce(h.eligible, false) AND NOT h.fractional
          AND h.price_per_hour_usd > 0 GROUP BY 1""", [str(snap / "cheapest_setups.parquet"), files]).fetchall())
    # the gpu-price-feed's per-GPU records (one GPU of a provider, per day since July) price the 1 x 1 shapes
    assert len(want) >= 40
    assert {d["day"]: d["cheapest"] for d in got["byDay"]} == want
    assert all(d["perMonth"] == round(d["cheapest"] * 730, 2) for d in got["byDay"])
    # the snapshot's own day: the cheapest published setup for this load (any format) is that day's cheapest,
    # the model JSON's first cheapest setup
    top = con.execute("""SELECT price_per_hour_usd, provider FROM read_parquet(?) WHERE model_id = 'qwen3-8b'
                         AND context = 8192 AND concurrency = 1 AND list = 'on_demand'
                         ORDER BY price_per_hour_usd, provider LIMIT 1""",
                      [str(snap / "cheapest_setups.parquet")]).fetchall()[0]
    first = json.loads((snap / "models" / "qwen3-8b.json").read_text())["cheapestSetups"][0]
    assert (first["pricePerHour"], first["provider"]) == (round(top[0], 4), top[1])
    last = got["byDay"][-1]
    assert (last["cheapest"], last["provider"]) == (round(top[0], 4), top[1])
    assert got["byDay"][-1]["providerList"] == sorted({r["provider"] for r in got["rows"]
                                                       if r["day"] == last["day"]})
    text = table(data, "cost-history", "qwen3-8b")
    assert "the providers of each day" in text and "$/month" in text
    assert got["origin"] == "published"
    # each shape in the most faithful format its published rows show (seeweb's A30 runs qwen3-8b native; its
    # fp8 row ranks first in the fp8 list, and was taken for it)
    listed: dict[tuple, set[str]] = {}
    for g, k, n, f in con.execute(
            "SELECT gpu_id, gpus_per_instance, instances, format FROM read_parquet(?) WHERE model_id = 'qwen3-8b' "
            "AND context = 8192 AND concurrency = 1 AND list = 'on_demand'",
            [str(snap / "cheapest_setups.parquet")]).fetchall():
        listed.setdefault((g, k, n), set()).add(f)
    from pipeline.compute.answers import (
        FIDELITY as order,  # most to least faithful, the vocabulary `cheapest` uses
    )

    for shape in got["shapes"]:
        formats = listed[shape["gpuId"], shape["gpusPerInstance"], shape["instances"]]
        assert shape["format"] == min(formats, key=lambda f: order.index(f) if f in order else len(order))
    assert {(s["gpuId"], s["gpusPerInstance"], s["instances"]) for s in got["shapes"]} == set(con.execute(
        "SELECT DISTINCT gpu_id, gpus_per_instance, instances FROM read_parquet(?) WHERE model_id = 'qwen3-8b' "
        "AND context = 8192 AND concurrency = 1 AND list = 'on_demand'",
        [str(snap / "cheapest_setups.parquet")]).fetchall())


def test_q13b_what_would_running_qwen3_8b_at_an_unpublished_load_have_cost(data: Path) -> None:
    """`vramlab cost-history qwen3-8b --context 16k --concurrency 4`: a load the snapshot does not publish is
    priced on the shapes of the top 20 setups `vramlab cheapest` gives for it today, each day's cheapest
    observation of such an instance times the instances."""
    got = ask(data, "cost-history", "qwen3-8b", "--context", "16k", "--concurrency", "4")
    assert got["origin"] == "planned from the snapshot's offers"
    setups = ask(data, "cheapest", "qwen3-8b", "--context", "16384", "--concurrency", "4", "--top", "20")["setups"]
    shapes = sorted({(s["gpu_id"], s["gpus_per_instance"], s["instances"]) for s in setups})
    assert sorted((s["gpuId"], s["gpusPerInstance"], s["instances"]) for s in got["shapes"]) == shapes
    snap = snapshot(data)
    files = [str(p) for p in (snap / "price_observations").glob("*/*.parquet")]
    con = duckdb.connect()
    want: dict[str, float] = {}
    for gpu, per_instance, instances in shapes:
        for day, price in con.execute("""
                SELECT strftime((observed_at AT TIME ZONE 'UTC')::DATE, '%Y-%m-%d'), min(price_per_hour_usd)
                FROM read_parquet(?, hive_partitioning = false)
                WHERE gpu_id = ? AND gpu_count = ? AND coalesce(eligible, false) AND NOT fractional
                  AND price_per_hour_usd > 0 AND (allocation = 'on_demand' OR allocation = 'reference_on_demand'
                                                  AND ? = 1 AND ? = 1)
                GROUP BY 1""", [files, gpu, per_instance, per_instance, instances]).fetchall():
            want[day] = min(want.get(day, float("inf")), round(price * instances, 4))
    assert len(want) >= 2
    assert {d["day"]: d["cheapest"] for d in got["byDay"]} == want
    # today's cheapest is `cheapest`'s first row
    assert got["byDay"][-1]["cheapest"] == round(setups[0]["price_per_hour"], 4)
    assert "as `cheapest` plans them" in table(data, "cost-history", "qwen3-8b", "--context", "16k",
                                               "--concurrency", "4")
    out = vramlab("cost-history", "qwen3-8b", "--context", "500000", "--data-dir", str(data))
    assert out.returncode == 2 and "above the model's maximum 40,960" in out.stderr


def test_q14_what_did_h100s_cost_day_by_day_over_the_last_months(data: Path) -> None:
    """`vramlab history H100` had a few replayed days, most with one stale source: the replay now holds months of
    dated records (the gpu-price-feed's daily lines, pipeline/replay/prices/gpu-price-feed/), each day with its
    providers, a day whose provider set changed marked, spot and marketplace prices on their own line, and none of
    those records ever a current offer."""
    got = ask(data, "history", "H100")
    days = [d["day"] for d in got["byDay"]]
    assert {d[:7] for d in days} >= {"2026-07", "2026-08", "2026-09", "2026-10", "2026-11"} and len(days) >= 40
    row = {(r["day"], r["provider"]): r for r in got["rows"]}
    # 2026-08.jsonl line 1 (collected_at 2026-08-01T11:11:58): "digitalocean": {"H100 80GB SXM": 3.39, ...};
    # line 2 (2026-08-02T11:07:39): 4.41, its only H100 key
    assert (row["2026-08-01", "digitalocean"]["price"], row["2026-08-02", "digitalocean"]["price"]) == (3.39, 4.41)
    assert row["2026-08-02", "digitalocean"]["gpu_id"] == "h100"
    assert row["2026-08-02", "digitalocean"]["instance_type"] == "record: H100 80GB SXM at digitalocean"
    # the same line: runpod "H100 80GB PCIe": 1.99 < "H100 94GB NVL": 2.59 < "H100 80GB SXM": 2.69, the day's
    # cheapest on-demand H100 (Vast's 1.7356 is a marketplace quote: the spot line's)
    day = got["byDay"][days.index("2026-08-02")]
    assert (day["cheapest"], day["provider"], day["gpu_id"]) == (1.99, "runpod", "h100-pcie")
    assert day["providerList"] == ["digitalocean", "lambda", "runpod", "scaleway", "verda"]
    # 2026-08.jsonl line 23 (2026-08-23) has no digitalocean (its collector could not read DigitalOcean that run):
    # the day is marked, and so is the next day in the history, 2026-09-01, when it is back
    gone, back = got["byDay"][days.index("2026-08-23")], got["byDay"][days.index("2026-08-23") + 1]
    assert (gone["removed"], gone["added"], gone["changed"]) == (["digitalocean"], [], True)
    assert (back["day"], back["added"], back["changed"]) == ("2026-09-01", ["digitalocean"], True)
    text = table(data, "history", "H100")
    assert "-digitalocean" in text.split("2026-08-23")[-1].splitlines()[0]
    # spot and marketplace: 2026-08.jsonl line 1, vastai "H100 80GB SXM": 1.7356 ("H100 80GB PCIe": 1.8689)
    spot = {(r["day"], r["provider"]): r["price"] for r in ask(data, "history", "H100", "--spot")["rows"]}
    assert spot["2026-08-01", "vast"] == 1.7356 and ("2026-08-01", "runpod") not in spot
    # records are history only: no current offer, no setup comes from them
    snap = snapshot(data)
    con = duckdb.connect()
    assert con.execute("SELECT count(*) FROM read_parquet(?) WHERE source = 'gpu-price-feed'",
                       [str(snap / "offers_current.parquet")]).fetchall()[0][0] == 0
    assert not [o for o in ask(data, "gpus", "H100", "--offers") if o["instance_type"].startswith("record: ")]


# fit's explanation ---------------------------------------------------------------------------------------------

def test_why_gpt_oss_120b_needs_two_h100s_and_what_would_make_one_do(data: Path) -> None:
    """`vramlab fit openai/gpt-oss-120b --gpu h100 --format native`: "why 2" blamed a 0.1 GiB KV cache, and
    on an RTX 4090 nothing suggested `--offload`."""
    got = ask(data, "fit", "openai/gpt-oss-120b", "--gpu", "h100", "--format", "native")
    config = json.loads((LOOKUPS / "openai__gpt-oss-120b.json").read_text())
    # vLLM's profile run on an 80 GB card samples min(8,192 tokens, 1,024 sequences) rows of the 201,088-token
    # vocabulary at 27 bytes each (plus 8,192 bf16 hidden states): 5.22 GiB, against 0.29 GiB of KV cache for one
    # request of 8,192 tokens (18 full-attention layers x 8,192 tokens + 18 sliding ones x 128, 2,048 bytes each)
    peak = (8192 * 2 * config["hidden_size"] + 27 * 1024 * config["vocab_size"]) / 2**30
    kv = (18 * 8192 + 18 * config["sliding_window"]) * 2 * config["num_key_value_heads"] * config["head_dim"] * 2 / 2**30
    limit = got["limitedBy"]
    assert got["gpus"] == 2 and limit["kind"] == "activation_peak" and limit["onGpus"] == 1
    assert limit["termsGiB"]["activationPeak"] == pytest.approx(peak, abs=0.001) and peak > 10 * kv
    assert limit["termsGiB"]["kvCache"] == pytest.approx(kv, abs=0.001)
    assert limit["change"]["flag"] == "--gpu-memory-utilization 0.95"
    assert ask(data, "fit", "openai/gpt-oss-120b", "--gpu", "h100:1", "--format", "native",
               "--gpu-memory-utilization", "0.95")["fits"]
    text = " ".join(table(data, "fit", "openai/gpt-oss-120b", "--gpu", "h100", "--format", "native").split())
    assert "activation peak" in text and "would change it: --gpu-memory-utilization 0.95" in text
    # one RTX 4090: the 56.7 GiB of MXFP4 experts alone exceed the card, no format fits one, --offload does
    one = ask(data, "fit", "openai/gpt-oss-120b", "--gpu", "rtx-4090:1", "--format", "native")
    assert one["limitedBy"]["kind"] == "weights" and one["limitedBy"]["termsGiB"]["weights"] > 24
    assert one["limitedBy"]["change"]["flag"] == "--offload"
    assert "--offload" in table(data, "fit", "openai/gpt-oss-120b", "--gpu", "rtx-4090")


# look-ups ------------------------------------------------------------------------------------------------------

def test_look_ups_that_help(data: Path) -> None:
    """A typo in the org got the advice to go live (which would 404); a repo name without its org was unknown;
    replayed look-ups said "fetched" today; bundled configs showed their file stems."""
    typo = vramlab("size", "meta-lama/Llama-3.1-8B-Instruct", "--data-dir", str(data))
    assert typo.returncode == 2 and len(typo.stderr.strip().splitlines()) == 1
    assert "meta-llama/Llama-3.1-8B-Instruct" in typo.stderr and "VRAMLAB_LIVE" not in typo.stderr
    # the suggestion followed: a Hub repo the offline bundle lacks (its numbers are no known repo's), so the way is
    # to fetch it live, not another "did you mean" that calls it a typo of Llama-3.2-3B-Instruct
    followed = vramlab("size", "meta-llama/Llama-3.1-8B-Instruct", "--data-dir", str(data))
    assert followed.returncode == 2 and "VRAMLAB_LIVE=1" in followed.stderr, followed.stderr
    bare = vramlab("size", "Llama-3.1-8B-Instruct", "--json", "--data-dir", str(data))
    assert bare.returncode == 0 and "llama-3.1-8b" in bare.stderr
    llama = json.loads(bare.stdout)
    # Llama-3.1-8B: 128,256 x 4,096 embedding and LM head, 32 layers of attention (4,096 x (4,096 + 2 x 1,024 +
    # 4,096)), MLP (3 x 4,096 x 14,336) and two norms, a final norm: 8,030,261,248 parameters
    layer = 4096 * (4096 + 2 * 1024 + 4096) + 3 * 4096 * 14336 + 2 * 4096
    assert llama["model"] == "meta-llama/Llama-3.1-8B"
    assert llama["parameters"] == pytest.approx((2 * 128256 * 4096 + 32 * layer + 4096) / 1e9, abs=0.01)
    # the replay bundle's recording: the Hub manifest gives no capture time, so the replay's freeze time
    # (pipeline/settings.py: REPLAY_SNAPSHOT_AT, 2026-11-28) is the date it was seen
    manifest = json.loads((ROOT / "pipeline" / "replay" / "hub" / "manifest.json").read_text())["responses"]
    entry = next(e for e in manifest if e["file"] == "lookups/Qwen__Qwen3-235B-A22B.json")
    day = (entry.get("captured_at") or "2026-11-28")[:10]
    source = ask(data, "cheapest", "Qwen/Qwen3-235B-A22B", "--top", "1")["modelSource"]
    assert f"recorded {day}" in source and "fetched" not in source
    assert ask(data, "size", "Qwen/Qwen3-32B")["model"] == "Qwen/Qwen3-32B"  # a bundled config, by its repo


def test_more_rows_than_the_snapshot_publishes_are_planned_not_cut(data: Path) -> None:
    """The snapshot publishes each format's 5 cheapest setups: the overall answer read from them is exact for 5
    rows only (a configuration among the 6th-10th cheapest may be missing from its most faithful format's list,
    and then shows in a less faithful one). `cheapest --top 10` and `--top 20` are planned on the offers: as many
    rows as asked, each in its configuration's most faithful format, the first 5 the published ones."""
    five = ask(data, "cheapest", "qwen3-8b", "--top", "5")
    ten = ask(data, "cheapest", "qwen3-8b")  # --top 10 by default
    twenty = ask(data, "cheapest", "qwen3-8b", "--top", "20")
    assert (five["origin"], ten["origin"]) == ("published", "planned from the snapshot's offers")
    row = ("provider", "instance_type", "instances", "format", "price_per_hour")
    assert len(ten["setups"]) == 10 and len(twenty["setups"]) == 20
    assert [tuple(s[k] for k in row) for s in ten["setups"][:5]] == [tuple(s[k] for k in row) for s in five["setups"]]
    assert [tuple(s[k] for k in row) for s in twenty["setups"][:10]] == [tuple(s[k] for k in row)
                                                                         for s in ten["setups"]]
    # the same answer as a filter that keeps every setup (any filter plans on the offers)
    capped = ask(data, "cheapest", "qwen3-8b", "--max-price", "100000")
    assert [tuple(s[k] for k in row) for s in capped["setups"]] == [tuple(s[k] for k in row) for s in ten["setups"]]
    # each configuration once, in the most faithful format it runs among those listed for it
    prices = [s["price_per_hour"] for s in twenty["setups"]]
    assert prices == sorted(prices)


def test_models_serving_a_load_at_the_floor_come_first(data: Path) -> None:
    """`vramlab models --fits l40s --rate 1 ...`: the models whose figures meet the default interactive floor at
    the load (TTFT p90 <= 2 s, >= 10 tokens/s per user, not saturated) are listed before those that only hold in
    memory; the title counts them."""
    load = ("--rate", "1", "--input-tokens", "1000", "--output-tokens", "200")
    got = ask(data, "models", "--fits", "l40s", *load)
    runs = [m for m in got["models"] if m["fits"]]

    def meets(m: dict) -> bool:  # by hand from the row's own figures
        s = m["serving"]
        return s is not None and not s["saturated"] and s["ttftMsP90"] <= 2000 and s["tokensPerSPerUser"] >= 10

    flags = [meets(m) for m in runs]
    assert True in flags and False in flags
    assert flags == sorted(flags, reverse=True)  # every meeting one before every other
    text = " ".join(table(data, "models", "--fits", "l40s", *load).split())
    assert f"{sum(flags)} of them at the default interactive floor" in text
