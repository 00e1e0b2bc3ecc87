"""The command line a newcomer expects. Every test runs the real ``vramlab`` console script.

Covers: model/GPU/format resolution with did-you-mean, one-line errors (argparse's own too), contexts like 32k,
--version, help on every flag, no traceback on a closed pipe, ``size`` totals, ``fit`` for every format with what
limits the count, the substitute the export uses, cost from the cheapest offer and rent-vs-buy, ``models``,
``gpus`` with filters, ``cheapest`` with filters and camelCase keys, 100-column output.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
from helpers import ROOT, config_path
from test_cli_size import CONSOLE_SCRIPT, vramlab

PYPROJECT_VERSION = next(line.split('"')[1] for line in (ROOT / "pyproject.toml").read_text().splitlines()
                         if line.startswith("version ="))


def one_line_error(out: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert out.returncode == 2, (out.returncode, out.stdout[-500:], out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("vramlab: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# ------------------------------------------------------------------------------------------------ resolution

@pytest.mark.parametrize("name", ["qwen3-8b", "Qwen/Qwen3-8B", "QWEN3-8B", "qwen/qwen3-8b", "Qwen3-8B"])
def test_size_accepts_watchlist_and_repo_ids_from_the_replay_bundle(name: str, tmp_path: Path) -> None:
    # an empty data dir: before the first run the replay bundle's config answers
    out = vramlab("size", name, "--json", "--data-dir", str(tmp_path))
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    # Qwen3-8B: 36 layers, 8 KV heads of 128 dims -> 2 x 36 x 8 x 128 x 2 bytes = 147,456 bytes per token (BF16)
    assert data["modelType"] == "qwen3" and data["kvCacheBytesPerToken"]["bf16"] == 2 * 36 * 8 * 128 * 2


def test_fit_accepts_a_tracked_id_upper_case_gpu_and_format(tmp_path: Path) -> None:
    out = vramlab("fit", "llama-3.1-70b", "--gpu", "H100", "--format", "FP8", "--json", "--data-dir", str(tmp_path))
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["gpu"] == "h100" and data["format"] == "fp8" and data["fits"] is True


@pytest.mark.parametrize(("fmt", "canonical"), [("q4km", "q4_k_m"), ("Q4_K_M", "q4_k_m"), ("AWQ", "awq_int4"),
                                                ("BF16", "bf16"), ("Native", "native")])
def test_format_aliases(fmt: str, canonical: str) -> None:
    out = vramlab("fit", "qwen3-8b", "--gpu", "rtx-4090", "--format", fmt, "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["format"] == canonical


@pytest.mark.parametrize(("gpu", "canonical"), [("h100-sxm", "h100"), ("H100-SXM", "h100"), ("RTX-4090", "rtx-4090"),
                                                ("rtx4090", "rtx-4090")])
def test_gpu_aliases_any_case(gpu: str, canonical: str) -> None:
    out = vramlab("fit", "qwen3-8b", "--gpu", gpu, "--format", "bf16", "--json")
    assert out.returncode == 0, (gpu, out.stderr)
    assert json.loads(out.stdout)["gpu"] == canonical  # each alias to its own GPU, not either of the two


def test_separators_do_not_matter_for_model_ids() -> None:
    out = vramlab("size", "deepseekv3", "--json")  # the watchlist id is deepseek-v3
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["modelType"] == "deepseek_v3"


@pytest.mark.parametrize(("args", "needles"), [
    (("size", "kimi-k3.1-pr"), ("unknown model 'kimi-k3.1-pr'", "did you mean: kimi-k3.1-pro")),
    (("size", "qwen3-8c"), ("did you mean:", "qwen3-8b")),
    (("fit", "qwen3-8b", "--gpu", "h10", "--format", "bf16"), ("unknown GPU 'h10'", "did you mean:", "h100")),
    (("fit", "qwen3-8b", "--gpu", "h100", "--format", "q4kz"), ("unknown format 'q4kz'", "did you mean: q4_k_m")),
    # a family name: the catalog's three A100 cards (40 GB; 80 GB SXM4 and PCIe) differ in memory and form
    (("fit", "qwen3-8b", "--gpu", "A100", "--format", "bf16"),
     ("GPU 'A100' names 3 cards", "a100-40gb", "a100-80gb-sxm", "a100-80gb-pcie")),
    # 9,000 + 200 tokens do not fit the default 8,192-token context: the engine would refuse every request
    (("fit", "qwen3-8b", "--gpu", "h100", "--format", "bf16", "--rate", "5", "--input-tokens", "9000",
      "--output-tokens", "200"), ("9,000 + 200 tokens is longer than --context 8,192", "raise --context")),
])
def test_unknown_values_get_one_line_with_the_closest_matches(args: tuple[str, ...], needles: tuple[str, ...]) -> None:
    one_line_error(vramlab(*args), *needles)


# ------------------------------------------------------------------------------------------------ conventions

@pytest.mark.parametrize("args", [
    ("size",),  # missing argument
    ("fit", "qwen3-8b"),  # missing --gpu
    ("bogus",),  # unknown command
    ("size", "qwen3-8b", "--no-such-flag"),
    ("fit", "qwen3-8b", "--gpu", "h100", "--concurrency", "zero"),
    ("gpus", "--max-price", "cheap"),
    ("sources",),
    ("sources", "parse", "lambda", "README.md", "--rates", "no-such-rates.xml"),  # --rates missing
    ("sources", "parse", "lambda", "README.md", "--rates", "README.md"),  # --rates not the ECB's XML
])
def test_argparse_errors_are_one_line_exit_2(args: tuple[str, ...]) -> None:
    line = one_line_error(vramlab(*args))
    assert "usage:" not in line


def test_contexts_like_32k_and_1m() -> None:
    out = vramlab("size", "qwen3-8b", "--contexts", "8k,32K,128k,1M", "--json")
    assert out.returncode == 0, out.stderr
    assert [r["context"] for r in json.loads(out.stdout)["kvCacheGiBPerRequest"]] == [8192, 32768, 131072, 1048576]
    out = vramlab("fit", "qwen3-8b", "--gpu", "h100", "--format", "bf16", "--context", "32k", "--json")
    assert json.loads(out.stdout)["context"] == 32 * 1024


def test_version() -> None:
    out = vramlab("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"vramlab {PYPROJECT_VERSION}"


def test_every_flag_has_help_and_every_command_has_examples() -> None:
    import argparse

    from pipeline.cli.main import build_parser

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{path} {name}")
                continue
            if isinstance(action, argparse._HelpAction):
                continue
            assert action.help, f"{path}: {action.option_strings or action.dest} has no help text"
        has_commands = any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)
        if not has_commands or path == "vramlab":  # every command and sub-command (`sources list` too)
            assert parser.epilog and "examples:" in parser.epilog, f"{path} has no examples"

    walk(build_parser(), "vramlab")
    top = vramlab("--help").stdout
    assert "``" not in top and "examples:" in top


@pytest.mark.parametrize("command", [
    ("sources", "parse", "skypilot-runpod", "pipeline/replay/prices/skypilot-runpod/vms.csv", "--json"),  # print()
    ("models",),  # a rich table: rich's own broken-pipe handler exits 1 unless the CLI overrides it
    ("size", "qwen3-8b", "--contexts", "32k"),  # rich sentences and tables
], ids=["json", "models-table", "size-table"])
def test_closed_pipe_ends_quietly_with_exit_0(command: tuple[str, ...], tmp_path: Path) -> None:
    # like `vramlab models | head -1` once head has gone: the reader end is closed before the first write, so
    # every write fails with EPIPE (deterministic, unlike reading a line and racing the writer)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([str(CONSOLE_SCRIPT), *command, *(["--data-dir", str(tmp_path)]
                                                                 if command[0] in ("models", "size") else [])],
                              stdout=write_end, stderr=subprocess.PIPE, cwd=ROOT, timeout=120,
                              env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    finally:
        os.close(write_end)
    err = proc.stderr.decode()
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert proc.returncode == 0, (proc.returncode, err)  # docs/cli.md: "ends quietly (exit 0, no traceback)"


# ------------------------------------------------------------------------------------------------ size, fit

def test_size_totals_per_format_per_context() -> None:
    out = vramlab("size", str(config_path("meta-llama__Llama-3.1-8B")), "--contexts", "8k,32k", "--json")
    data = json.loads(out.stdout)
    # Llama-3.1-8B: 32 layers x 2 (K and V) x 8 KV heads x 128 dims x 2 bytes = 131,072 bytes per token,
    # so 8,192 tokens are exactly 1 GiB and 32,768 tokens 4 GiB of BF16 KV cache; no recurrent state
    totals = {row["context"]: row["byFormat"] for row in data["totalsGiB"]}
    for fmt, weights in data["weightsGiB"].items():
        assert totals[8192][fmt] == pytest.approx(weights + 1.0, abs=0.011)
        assert totals[32768][fmt] == pytest.approx(weights + 4.0, abs=0.011)
    table = vramlab("size", str(config_path("meta-llama__Llama-3.1-8B")), "--contexts", "8k,32k").stdout
    assert "total @8k" in table and "total @32k" in table
    assert max(len(line) for line in table.splitlines()) <= 100


def test_fit_without_format_answers_every_format_and_names_the_limit() -> None:
    out = vramlab("fit", "gpt-oss-20b", "--gpu", "rtx-4090", "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    by = {r["format"]: r for r in rows}
    assert {"native", "bf16", "fp8", "q8_0", "q4_k_m", "mxfp4"} <= set(by)
    # gpt-oss-20b ships MXFP4 (about 13 GB): one 24 GB card holds it; BF16 (about 39 GiB of weights) cannot
    assert by["native"]["gpus"] == 1 and by["native"]["limitedBy"]["kind"] == "none"
    assert by["bf16"]["gpus"] >= 2 and by["bf16"]["limitedBy"]["kind"] == "weights"
    assert all(r["limitedBy"]["note"] for r in rows)
    table = vramlab("fit", "gpt-oss-20b", "--gpu", "rtx-4090").stdout
    assert "limit" in table and "weights" in table
    assert max(len(line) for line in table.splitlines()) <= 100


def test_fit_warns_about_multi_machine_consumer_setups() -> None:
    # DeepSeek-V3 in Q4_K_M (~380 GiB) cannot fit one 4-card RTX 4090 machine (4 x 24 GB)
    data = json.loads(vramlab("fit", "deepseek-v3", "--gpu", "rtx-4090", "--format", "q4_k_m", "--json").stdout)
    assert data["plan"]["nodes"] > 1 and data["gpuKind"] == "consumer"
    assert data["warnings"] and "machines" in data["warnings"][0]
    dc = json.loads(vramlab("fit", "deepseek-v3", "--gpu", "h100", "--format", "fp8", "--json").stdout)
    assert dc["warnings"] == []


def test_sources_list_is_sorted_by_name(tmp_path: Path) -> None:
    rows = json.loads(vramlab("sources", "list", "--json", "--data-dir", str(tmp_path)).stdout)
    names = [r["source"] for r in rows]
    assert names == sorted(names)


def test_fit_says_when_the_kv_cache_sets_the_count() -> None:
    # Llama-3.1-8B in BF16 on one 24 GB RTX 4090: ~15 GiB of weights fit; 131,072 tokens of BF16 KV cache are
    # 16 GiB more (131,072 bytes per token), so the cache, not the weights, asks for more GPUs
    out = vramlab("fit", str(config_path("meta-llama__Llama-3.1-8B")), "--gpu", "rtx-4090", "--format", "bf16",
                  "--context", "128k", "--json")
    data = json.loads(out.stdout)
    assert data["gpus"] > 1 and data["limitedBy"]["kind"] == "kv_cache"


def test_fit_h200_q4_k_m_gives_the_exports_plan_and_names_the_substitute() -> None:
    from pipeline.cli.models import load_model
    from pipeline.exports.model_json import gpus_needed

    out = vramlab("fit", "qwen3-8b", "--gpu", "h200", "--format", "q4_k_m", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    needed, _ = gpus_needed(load_model("qwen3-8b"))
    cell = next(g for g in needed.gpus if g.gpu == "h200")
    plan = cell.plans.q4_k_m
    assert plan is not None
    assert data["fits"] is True and data["substitute"]["format"] == "awq_int4" == plan.format
    assert data["gpus"] == cell.byFormat.q4_k_m
    assert data["plan"]["tensorParallel"] == plan.tensorParallel
    text = vramlab("fit", "qwen3-8b", "--gpu", "h200", "--format", "q4_k_m").stdout
    assert "awq_int4" in text and "substitute" in text
    # asking for the engine explicitly keeps the engine's own answer
    explicit = json.loads(vramlab("fit", "qwen3-8b", "--gpu", "h200", "--format", "q4_k_m", "--engine", "vllm",
                                  "--json").stdout)
    assert explicit["fits"] is False and explicit["substitute"] is None


# ------------------------------------------------------------------------------------------------ a snapshot

OBSERVED = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


def write_snapshot(data_dir: Path, offers: list[dict]) -> Path:
    """A published snapshot with only what the CLI reads: offers_current.parquet and an empty
    cheapest_setups.parquet written as the exporter writes them (DuckDB schema from the migrations, published
    columns from pipeline/exports/tables.py), and index.json."""
    from pipeline.exports.tables import CheapestSetups, OffersCurrent, select_sql
    from pipeline.quality.offers import rebuild_offer_quality
    from pipeline.storage.db import migrate

    snap = data_dir / "exports" / "20261128T120000000000Z"
    snap.mkdir(parents=True)
    con = duckdb.connect()
    migrate(con)
    base = {"source": "test", "zone": None, "gpu_name": "?", "fractional": False, "gpu_memory_gb": None,
            "vcpus": None, "ram_gb": None, "currency": "USD", "unit": "instance-hour", "fx_date": None,
            "availability": None, "first_seen": OBSERVED, "last_seen": OBSERVED, "verified_at": OBSERVED,
            "removed": False, "stale": False, "previous_price_usd": None, "jump_unconfirmed": False}
    for i, o in enumerate(offers):
        row = base | o | {"offer_key": f"k{i}", "price_per_hour": o["price_per_hour_usd"],
                          "price_per_gpu_hour": o["price_per_hour_usd"] / o["gpu_count"],
                          "price_per_gpu_hour_usd": o["price_per_hour_usd"] / o["gpu_count"]}
        cols = ", ".join(row)
        con.execute(f"INSERT INTO offers_current ({cols}) VALUES ({', '.join('?' for _ in row)})", list(row.values()))
    rebuild_offer_quality(con, OBSERVED)  # the real quality stage: `eligible` is its view's verdict
    for table, name in ((OffersCurrent, "offers_current"), (CheapestSetups, "cheapest_setups")):
        query = select_sql(table, snapshot_id=snap.name) + f" FROM {table.db_table}"
        con.execute(f"COPY ({query}) TO '{snap / f'{name}.parquet'}' (FORMAT parquet)")
    con.close()
    (snap / "index.json").write_text(json.dumps({"snapshot_id": snap.name, "models": [
        {"id": "qwen3-8b", "repo": "Qwen/Qwen3-8B", "status": "ok"},
        {"id": "llama-3.1-70b", "repo": "meta-llama/Llama-3.1-70B", "status": "ok"}]}))
    (data_dir / "exports" / "latest").symlink_to(snap.name)
    return snap


OFFERS = [
    {"provider": "alpha", "instance_type": "a-4090", "region": "us-east-1", "gpu_id": "rtx-4090", "gpu_count": 1,
     "price_per_hour_usd": 0.40, "allocation": "on_demand"},
    {"provider": "beta", "instance_type": "b-4090x2", "region": "eu-west-1", "gpu_id": "rtx-4090", "gpu_count": 2,
     "price_per_hour_usd": 1.00, "allocation": "on_demand"},
    {"provider": "alpha", "instance_type": "a-h100x8", "region": "us-east-1", "gpu_id": "h100", "gpu_count": 8,
     "price_per_hour_usd": 20.00, "allocation": "on_demand"},
    {"provider": "beta", "instance_type": "b-h100", "region": "eu-west-1", "gpu_id": "h100", "gpu_count": 1,
     "price_per_hour_usd": 2.10, "allocation": "on_demand"},
    {"provider": "gamma", "instance_type": "g-h100", "region": "us-west-2", "gpu_id": "h100", "gpu_count": 1,
     "price_per_hour_usd": 1.20, "allocation": "spot"},
    {"provider": "gamma", "instance_type": "g-h100-old", "region": "us-west-2", "gpu_id": "h100", "gpu_count": 1,
     "price_per_hour_usd": 0.50, "allocation": "on_demand", "stale": True},
]


@pytest.fixture
def snapshot_dir(tmp_path: Path) -> Path:
    write_snapshot(tmp_path, OFFERS)
    return tmp_path


def test_fit_prices_the_cheapest_offer_and_rent_vs_buy(snapshot_dir: Path) -> None:
    out = vramlab("fit", "qwen3-8b", "--gpu", "rtx-4090", "--format", "q8_0", "--hours-per-day", "4",
                  "--usd-per-kwh", "0.15", "--json", "--data-dir", str(snapshot_dir))
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["gpus"] == 1
    offer = data["cost"]["offer"]
    # the cheapest one-GPU RTX 4090 offer is alpha's at $0.40/h; 730 h a month = $292
    assert (offer["provider"], offer["pricePerHour"], offer["pricePerMonth"]) == ("alpha", 0.40, 292.0)
    decode = offer["decodeTokensPerS"]
    assert offer["usdPerMillionTokens"] == pytest.approx(0.40 / (decode * 3600) * 1e6, rel=1e-3)
    # rent vs buy (catalog: RTX 4090 launch price $1,599, 450 W): renting 4 h/day for 30.4 days costs
    # 0.40 x 4 x 30.4 = $48.64 a month; owning costs 0.450 kW x 4 h x 30.4 x $0.15 = $8.208 of power;
    # break-even = 1599 / (48.64 - 8.208) = 39.55 months
    rvb = data["cost"]["rentVsBuy"]
    assert rvb["powerPerMonth"] == pytest.approx(8.21, abs=0.01)
    assert rvb["breakEvenMonths"] == pytest.approx(1599 / (48.64 - 8.208), abs=0.05)
    text = vramlab("fit", "qwen3-8b", "--gpu", "rtx-4090", "--format", "q8_0", "--data-dir", str(snapshot_dir)).stdout
    assert "$0.40/h" in text and "$292/month" in text and "/1M tokens" in text and "breaks even" in text


def test_gpus_lists_current_offers_cheapest_first_with_filters(snapshot_dir: Path) -> None:
    def rows(*args: str) -> list[dict]:
        out = vramlab("gpus", *args, "--json", "--data-dir", str(snapshot_dir))
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    h100 = rows("H100")
    # on-demand, not stale: beta $2.10/GPU-h, then alpha $20/8 = $2.50/GPU-h (gamma's stale $0.50 and spot left out)
    assert [(r["provider"], r["price_per_gpu_hour_usd"]) for r in h100] == [("beta", 2.10), ("alpha", 2.50)]
    assert [r["provider"] for r in rows("h100:8")] == ["alpha"]
    assert [r["provider"] for r in rows("h100", "--max-price", "2.2")] == ["beta"]
    assert [r["provider"] for r in rows("h100", "--region", "US")] == ["alpha"]
    assert [r["provider"] for r in rows("h100", "--spot")] == ["gamma"]
    assert {r["gpu_id"] for r in rows("--provider", "ALPHA")} == {"rtx-4090", "h100"}
    per_kind = rows()  # the cheapest offer per GPU kind
    assert [(r["gpu_id"], r["price_per_gpu_hour_usd"]) for r in per_kind] == [("rtx-4090", 0.40), ("h100", 2.10)]
    one_line_error(vramlab("gpus", "--provider", "alpah", "--data-dir", str(snapshot_dir)), "did you mean: alpha")
    table = vramlab("gpus", "h100", "--data-dir", str(snapshot_dir)).stdout
    assert "$/GPU-h" in table and "20261128T120000000000Z" in table
    assert max(len(line) for line in table.splitlines()) <= 100


def test_gpus_shows_memory_per_gpu_when_the_source_does_not(snapshot_dir: Path) -> None:
    # these offers carry no gpu_memory_gb (most price lists don't): the GB column falls back to the GPU's own
    # memory, H100 SXM 80 GB and RTX 4090 24 GB (NVIDIA's data sheets), and the JSON keeps the source's null
    out = vramlab("gpus", "--json", "--data-dir", str(snapshot_dir))
    assert out.returncode == 0, out.stderr
    memory = {r["gpu_id"]: (r["gpu_memory_gb"], r["catalog_memory_gb"]) for r in json.loads(out.stdout)}
    assert memory == {"rtx-4090": (None, 24), "h100": (None, 80)}
    table = vramlab("gpus", "--data-dir", str(snapshot_dir)).stdout
    rows = {line.split()[0]: line.split() for line in table.splitlines() if line.strip().startswith(("h100", "rtx"))}
    assert rows["h100"][2] == "80" and rows["rtx-4090"][2] == "24", table


def test_gpus_without_a_snapshot_says_what_to_do(tmp_path: Path) -> None:
    one_line_error(vramlab("gpus", "--data-dir", str(tmp_path)), "vramlab run")


def test_cheapest_filters_single_machine_and_camel_case_keys(snapshot_dir: Path) -> None:
    out = vramlab("cheapest", "Qwen/Qwen3-8B", "--format", "q8_0", "--json", "--data-dir", str(snapshot_dir),
                  "--provider", "beta")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    setups = data["setups"]
    # beta rents one 2x RTX 4090 box at $1.00/h and single H100s at $2.10/h; Q8_0 (GGUF) of an 8B model fits one
    # GPU, but the H100's engine (vLLM) does not serve GGUF, so only the RTX 4090 box (llama.cpp) is a setup
    assert [(s["provider"], s["gpu_id"], s["price_per_hour"], s["engine"]) for s in setups] == [
        ("beta", "rtx-4090", 1.0, "llama.cpp")]
    for s in setups:  # one parser reads the CLI and the model JSON: camelCase beside snake_case, same values
        assert s["pricePerHour"] == s["price_per_hour"] and s["gpusPerInstance"] == s["gpus_per_instance"]
        assert s["usdPerMillionTokens"] == s["usd_per_million_tokens"] == pytest.approx(
            s["price_per_hour"] / (s["decode_tokens_per_s"] * 3600) * 1e6, rel=1e-3)
    # llama-3.1-70b in BF16 (~131 GiB) needs two H100s: 1-GPU offers span machines, the 8-GPU box does not
    spread = json.loads(vramlab("cheapest", "llama-3.1-70b", "--format", "bf16", "--json", "--data-dir",
                                str(snapshot_dir), "--region", "eu").stdout)["setups"]
    assert spread and spread[0]["instances"] > 1
    single = json.loads(vramlab("cheapest", "llama-3.1-70b", "--format", "bf16", "--json", "--data-dir",
                                str(snapshot_dir), "--single-machine").stdout)["setups"]
    assert single and all(s["instances"] == 1 for s in single) and single[0]["instance_type"] == "a-h100x8"


def test_cheapest_validates_the_format_and_never_prints_an_empty_table(snapshot_dir: Path) -> None:
    one_line_error(vramlab("cheapest", "qwen3-8b", "--format", "q9_k", "--data-dir", str(snapshot_dir)),
                   "unknown format 'q9_k'")
    # a valid format with nothing published for it (5 rows: the published lists answer): one line, not an empty
    # table with exit 0
    one_line_error(vramlab("cheapest", "qwen3-8b", "--format", "q4km", "--top", "5", "--data-dir",
                           str(snapshot_dir)), "no on-demand setup of qwen3-8b in q4_k_m")
    # planned on the offers, nothing under the price cap: the same one line
    one_line_error(vramlab("cheapest", "qwen3-8b", "--format", "q4km", "--max-price", "0.01", "--data-dir",
                           str(snapshot_dir)), "no on-demand setup of qwen3-8b in q4_k_m")
    one_line_error(vramlab("cheapest", "qwen3-8c", "--data-dir", str(snapshot_dir)), "did you mean: qwen3-8b")


def test_models_lists_ids_repos_and_facts(tmp_path: Path) -> None:
    out = vramlab("models", "--json", "--data-dir", str(tmp_path))
    assert out.returncode == 0, out.stderr
    rows = {r["id"]: r for r in json.loads(out.stdout)}
    watchlist = json.loads((ROOT / "pipeline" / "data" / "watchlist.json").read_text())["models"]
    assert {m["id"] for m in watchlist} <= set(rows)
    q = rows["qwen3-8b"]
    # Qwen3-8B config: max_position_embeddings 40,960, torch_dtype bfloat16
    assert q["repo"] == "Qwen/Qwen3-8B" and q["maxContext"] == 40960 and q["nativeFormat"] == "bf16"
    assert 8.0 < q["parameters"] < 8.4
    # the configs the project ships are listed too, once each, by the name `size` and `fit` take
    shipped = [p.stem.replace("__", "/", 1) for folder in ("pipeline/replay/hub/configs",
                                                           "sizing_core/data/calibration/configs")
               for p in (ROOT / folder).glob("*.json") if not p.name.endswith(".hf_quant_config.json")]
    listed = {(r["repo"] or "").lower() for r in rows.values()} | set(rows)
    assert all(repo.lower() in listed or repo.split("/")[-1].lower() in listed for repo in shipped)
    assert len(rows) == len(json.loads(out.stdout))  # ids are unique
    assert rows["qwen3-32b"]["repo"] == "Qwen/Qwen3-32B" and rows["qwen3-32b"]["source"].startswith("bundled config")
    table = vramlab("models", "--data-dir", str(tmp_path)).stdout
    assert "qwen3-8b" in table and max(len(line) for line in table.splitlines()) <= 100
    # ids and repos are copied whole: at 100 columns the longest repos do not fit beside the longest id, so the
    # table leaves the repo column to a wider terminal (and says how wide) rather than fold them
    said = re.search(r"repos in a terminal of (\d+) columns", " ".join(table.split()))
    assert said and int(said.group(1)) > 100, table
    lines = table.splitlines()
    assert all(any(line.startswith(f" {i} ") for line in lines) for i in rows)  # every id on one line
    assert not any(r["repo"] in table for r in rows.values() if r["repo"] and "/" in r["repo"])  # no repo column
    # at the width the caption names every repo is shown whole, on its id's line
    wide = vramlab("models", "--data-dir", str(tmp_path), env={"COLUMNS": said.group(1)}).stdout
    assert all(any(line.startswith(f" {r['id']} ") and f" {r['repo']} " in line for line in wide.splitlines())
               for r in rows.values() if r["repo"])


def test_a_saturated_answer_at_a_load_prints_its_words_not_markup(tmp_path: Path) -> None:
    """1,000 req/s of 1,000-token prompts on one L40S cannot be served (an 8B model's prefill alone is ~16 GFLOP a
    token: 16 PFLOP/s against the card's ~0.36 PFLOP/s of BF16), so the answer says "saturated"; piped, the word
    comes without rich's markup around it."""
    out = vramlab("fit", "qwen3-8b", "--gpu", "l40s", "--format", "bf16", "--rate", "1000", "--input-tokens", "1000",
                  "--output-tokens", "200", "--data-dir", str(tmp_path))
    assert out.returncode == 0, out.stderr
    said = [line for line in out.stdout.splitlines() if line.startswith("saturated")]
    assert said and "[" not in said[0] and "]" not in said[0], out.stdout


def test_fit_at_a_load_without_a_format_shows_the_load_per_format(tmp_path: Path) -> None:
    """Every format's row at the load: the title names the rate (not "1 request(s) of 8,192 tokens"), and each row
    shows its TTFT p90, ITL and saturation rate, the figures of its JSON answer."""
    args = ("fit", "qwen3-8b", "--gpu", "h100", "--rate", "5", "--input-tokens", "1000", "--output-tokens", "200",
            "--data-dir", str(tmp_path))
    table, answer = vramlab(*args), vramlab(*args, "--json")
    assert table.returncode == 0 and answer.returncode == 0, table.stderr + answer.stderr
    assert "at 5 req/s, --context 8,192" in table.stdout and "request(s) of" not in table.stdout
    header = next(line for line in table.stdout.splitlines() if line.strip().startswith("format"))
    assert "TTFT p90" in header and "ITL" in header and "max r/s" in header
    bf16 = next(r for r in json.loads(answer.stdout) if r["format"] == "bf16")["serving"]
    row = next(line.split() for line in table.stdout.splitlines() if line.strip().startswith("bf16"))
    assert f"{bf16['ttftMsP90']:,.0f}" in row and f"{bf16['maxRate']:,.1f}" in row


def test_the_data_dir_may_come_before_the_command(tmp_path: Path) -> None:
    """``vramlab --data-dir D COMMAND`` reads D as ``COMMAND --data-dir D`` does (argparse took D for the command):
    a model tracked into D's watchlist is listed by both, and not by the same command on another data dir."""
    added = vramlab("--data-dir", str(tmp_path), "track", "Qwen/Qwen3-235B-A22B", "--id", "only-here", "--json")
    assert added.returncode == 0, added.stderr
    listed = [{m["id"] for m in json.loads(out.stdout)} for out in
              (vramlab("--data-dir", str(tmp_path), "models", "--json"),
               vramlab("models", "--data-dir", str(tmp_path), "--json"),
               vramlab("models", "--data-dir", str(tmp_path / "other"), "--json"))]
    assert "only-here" in listed[0] and listed[0] == listed[1] and "only-here" not in listed[2]


def test_answers_at_a_rate_carry_one_cost_per_token_and_utc_dates(snapshot_dir: Path) -> None:
    """At 0.5 req/s of 100 output tokens a setup that keeps up produces 0.5 x 100 = 50 output tokens a second, so
    its $/1M output tokens is its $/h / (50 x 3,600) x 10^6 whatever its step; the row's own at-load $/1M is that
    figure (not the one-request figure of its memory plan), and the load, not a default of 1, is the top-level
    concurrency. Timestamps are written one way (UTC, ``Z``) by every command."""
    load = ("--rate", "0.5", "--input-tokens", "500", "--output-tokens", "100", "--json", "--data-dir",
            str(snapshot_dir))
    out = vramlab("cheapest", "qwen3-8b", *load)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["concurrency"] is None and data["load"]["rate"] == 0.5
    for s in data["setups"]:
        assert not s["serving"]["saturated"]
        by_hand = s["price_per_hour"] / (0.5 * 100 * 3600) * 1e6
        assert s["usdPerMillionTokensAtLoad"] == s["usd_per_million_tokens_at_load"] == pytest.approx(by_hand)
        assert s["serving"]["usdPerMillionOutputTokens"] == pytest.approx(by_hand)
        assert s["verifiedAt"].endswith("Z")
    fit = vramlab("fit", "qwen3-8b", "--gpu", "rtx-4090", "--format", "q8_0", *load)
    assert fit.returncode == 0, fit.stderr
    answer = json.loads(fit.stdout)
    offer = answer["cost"]["offer"]
    assert (offer["provider"], offer["pricePerHour"]) == ("alpha", 0.40) and offer["verifiedAt"].endswith("Z")
    assert answer["serving"]["usdPerMillionOutputTokens"] == pytest.approx(0.40 / (0.5 * 100 * 3600) * 1e6)
    text = vramlab("fit", "qwen3-8b", "--gpu", "rtx-4090", "--format", "q8_0", *load[:-3],
                   "--data-dir", str(snapshot_dir)).stdout
    assert f"${0.40 / (0.5 * 100 * 3600) * 1e6:.2f}/1M output tokens at this load" in text
    compared = json.loads(vramlab("compare", "qwen3-8b", "--gpu", "rtx-4090", "--gpu", "h100", *load).stdout)
    assert compared["concurrency"] is None
    assert all(g["verifiedAt"] is None or g["verifiedAt"].endswith("Z") for g in compared["gpus"])
    gpus = json.loads(vramlab("gpus", "h100", "--json", "--data-dir", str(snapshot_dir)).stdout)
    assert gpus and all(o["verified_at"].endswith("Z") for o in gpus)


def test_a_region_no_offer_names_is_said_as_such(snapshot_dir: Path) -> None:
    """The snapshot's regions are us-east-1, eu-west-1 and us-west-2: a region none starts with is the answer's
    reason (not the load or the model), with the closest names."""
    one_line_error(vramlab("cheapest", "qwen3-8b", "--region", "mars", "--data-dir", str(snapshot_dir)),
                   "no offer in a region starting 'mars'")
    one_line_error(vramlab("cheapest", "qwen3-8b", "--region", "eu-wset", "--rate", "1", "--input-tokens", "500",
                           "--output-tokens", "100", "--data-dir", str(snapshot_dir)), "did you mean: eu-west-1")


def test_finetune_answers_lora_and_full_with_the_gpus_that_hold_them(tmp_path: Path) -> None:
    """Llama-3.1-8B (32 layers, hidden 4,096, MLP 14,336, 8 KV heads of 128, vocabulary 128,256; 8,030,261,248
    parameters). LoRA rank 16 on q, k, v, o, gate, up, down: per layer 16 x ((4096 + 4096) x 2 + (4096 + 1024) x 2
    + (14336 + 4096) x 3) = 1,310,720, x 32 = 41,943,040 trainable (what peft prints for this model). Full
    fine-tuning: 16 bytes a parameter, sharded; activations per GPU at 2,048 tokens: 32 x 2 x 2048 x 4096 +
    34 x 2048 x 4096 + 4 x 2048 x 128256 bytes. An H100 (81,559 MiB driver-reported, 1 GiB kept for the CUDA
    context) holds it from 2 GPUs: 128.5 GB / 2 + 1.87 GB = 61.6 GiB; one holds 121.4 GiB."""
    cfg = str(config_path("meta-llama__Llama-3.1-8B"))
    out = vramlab("finetune", cfg, "--gpu", "h100", "--json", "--data-dir", str(tmp_path))
    assert out.returncode == 0, out.stderr
    rows = {r["method"]: r for r in json.loads(out.stdout)["methods"]}
    assert rows["lora"]["trainableParameters"] == rows["qlora"]["trainableParameters"] == 41_943_040
    activations = 32 * 2 * 2048 * 4096 + 34 * 2048 * 4096 + 4 * 2048 * 128256
    full = rows["full"]
    assert full["trainableParameters"] == 8_030_261_248
    assert (full["gpusNeeded"], full["fits"]) == (2, True)
    assert full["totalGib"] == pytest.approx((16 * 8_030_261_248 / 2 + activations) / 2**30, rel=1e-9)
    assert rows["lora"]["gpusNeeded"] == 1 and rows["lora"]["totalGib"] == pytest.approx(
        (2 * 8_030_261_248 + 16 * 41_943_040 + activations) / 2**30, rel=1e-9)
    one = json.loads(vramlab("finetune", cfg, "--method", "full", "--gpu", "h100:1", "--json").stdout)["methods"]
    assert one[0]["fits"] is False and one[0]["totalGib"] == pytest.approx(
        (16 * 8_030_261_248 + activations) / 2**30, rel=1e-9)
    text = vramlab("finetune", cfg, "--gpu", "rtx-4090", "--data-dir", str(tmp_path)).stdout
    assert "too large on 4" in text and "lora" in text  # full: 128.5 GB / 4 + 1.87 > 23 GiB on a 4-card box
    one_line_error(vramlab("finetune", cfg, "--gpu", "h100:16"), "one machine holds at most 8 h100")


def test_a_range_that_excludes_its_estimate_is_explained() -> None:
    """The at-load ranges are the calibration band (measured / predicted, 5-95%) applied to the estimate; for a
    model class whose runs all measured on one side of the estimate (MLA's TTFT: 1.2-4.3x) the estimate lies
    outside its own range, and the answer says why instead of looking like an error."""
    from pipeline.cli.tables import serving_lines

    base = {"rate": 1.0, "concurrency": None, "ttftMs": 167.0, "ttftMsP90": 198.0, "itlMs": 79.0, "e2eMs": 15900.0,
            "e2eMsP90": 16000.0, "outputTokensPerS": 200.0, "requestsPerS": 1.0, "meanBatch": 15.9,
            "saturated": False, "maxRate": 8.8, "ttftMsRange": [150.0, 400.0], "itlMsRange": [60.0, 90.0],
            "e2eMsRange": [9800.0, 23100.0]}
    inside = " ".join(str(line) for line in serving_lines(base))
    assert "fell all on one side" not in inside
    outside = " ".join(str(line) for line in serving_lines(base | {"ttftMsRange": [202.0, 720.0],
                                                                    "itlMsRange": [7.2, 70.6]}))
    assert "for TTFT, ITL they fell all on one side of the estimate" in outside
