"""``fit`` prices the plan it shows. Runs the real ``vramlab`` console script on a handmade snapshot.

Before, the cost line priced the cheapest published-style setup of the GPU (re-planned per instance shape with the
GPU's default engine), which could be another layout than the plan printed above it: ``fit gpt-oss-20b --gpu
rtx-4090 --engine vllm --format bf16`` showed vLLM TP 2 on one machine and priced two 1-GPU machines running
llama.cpp with PP 2. Now the price is that of an offer whose instances run the plan shown, and a cheaper other
layout is named as such (``otherLayout``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli_newcomer import write_snapshot
from test_cli_size import vramlab

OFFERS = [  # RTX 4090 (catalog: launch price $1,599, 450 W), on-demand
    {"provider": "alpha", "instance_type": "a-4090", "region": "us-east-1", "gpu_id": "rtx-4090", "gpu_count": 1,
     "price_per_hour_usd": 0.40, "allocation": "on_demand"},
    {"provider": "beta", "instance_type": "b-4090x2", "region": "eu-west-1", "gpu_id": "rtx-4090", "gpu_count": 2,
     "price_per_hour_usd": 1.00, "allocation": "on_demand"},
]


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    write_snapshot(tmp_path, OFFERS)
    return tmp_path


def fit(data_dir: Path, *args: str) -> dict:
    out = vramlab("fit", "gpt-oss-20b", "--gpu", "rtx-4090", "--format", "bf16", "--hours-per-day", "4",
                  "--usd-per-kwh", "0.15", "--json", "--data-dir", str(data_dir), *args)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_fit_prices_the_vllm_tp2_plan_it_shows_not_two_one_gpu_machines(data_dir: Path) -> None:
    data = fit(data_dir, "--engine", "vllm")
    plan = data["plan"]
    # gpt-oss-20b in BF16 (~41 GB of weights) needs two 24 GB cards. TP 2 leaves vLLM no room (each rank also
    # holds NCCL buffers, 0.15 GiB, and the sampler warm-up of 256 rows x 201,088 words, 1.3 GiB); two pipeline
    # stages in one machine fit
    assert (data["engine"], data["gpus"], plan["tensorParallel"], plan["pipelineParallel"], plan["nodes"]) == \
        ("vllm", 2, 1, 2, 1)
    offer = data["cost"]["offer"]
    # the plan is priced as shown, on one machine: beta's 2-GPU instance
    assert (offer["provider"], offer["instanceType"], offer["instances"], offer["gpusPerInstance"]) == \
        ("beta", "b-4090x2", 1, 2)
    assert (offer["engine"], offer["tensorParallel"], offer["pipelineParallel"]) == ("vllm", 1, 2)
    assert (offer["pricePerHour"], offer["pricePerMonth"]) == (1.00, 730.00)  # 1 x $1.00; x 730 h
    # $/1M tokens at the decode rate of the plan shown: $1.00 / (tok/s x 3600) x 1e6
    decode = data["throughput"]["decodeTokensPerS"]
    assert offer["decodeTokensPerS"] == decode
    assert offer["usdPerMillionTokens"] == pytest.approx(1.00 / (decode * 3600) * 1e6, rel=1e-3)
    # rent vs buy for the 2 GPUs of the plan: hardware 2 x 1,599 = 3,198; power 0.9 kW x 4 h x 30.4 d x 0.15 =
    # 16.416/month; rent 1.00 x 4 x 30.4 = 121.60/month; break-even 3198 / (121.60 - 16.416) = 30.40 months
    rvb = data["cost"]["rentVsBuy"]
    assert (rvb["gpus"], rvb["hardwareUsd"], rvb["watts"]) == (2, 3198.0, 900.0)
    assert rvb["powerPerMonth"] == pytest.approx(16.42, abs=0.01)
    assert rvb["rentPerMonthAtUsage"] == pytest.approx(121.60, abs=0.01)
    assert rvb["breakEvenMonths"] == pytest.approx(3198 / (121.60 - 16.416), abs=0.05)
    # what `cheapest` would rent instead is named as another layout: 2 x alpha at 2 x $0.40 = $0.80/h, llama.cpp
    # (the 4090's default engine) splitting layers over the two machines
    other = data["cost"]["otherLayout"]
    assert (other["provider"], other["instances"], other["gpusPerInstance"], other["tensorParallel"],
            other["pipelineParallel"], other["engine"], other["pricePerHour"]) == \
        ("alpha", 2, 1, 1, 2, "llama.cpp", 0.80)
    assert "different layout" in other["note"]


def test_fit_with_the_default_engine_prices_one_machine_as_shown(data_dir: Path) -> None:
    data = fit(data_dir)
    plan = data["plan"]
    # llama.cpp on consumer cards: layers split over 2 GPUs of one machine (up to 4 per machine)
    assert (data["engine"], data["gpus"], plan["tensorParallel"], plan["pipelineParallel"], plan["nodes"]) == \
        ("llama.cpp", 2, 1, 2, 1)
    offer = data["cost"]["offer"]
    # one machine with 2 GPUs, as shown (two alpha machines over RPC would be a different deployment)
    assert (offer["provider"], offer["instances"], offer["gpusPerInstance"], offer["pricePerHour"]) == \
        ("beta", 1, 2, 1.00)
    assert data["cost"]["otherLayout"]["instances"] == 2 and data["cost"]["otherLayout"]["pricePerHour"] == 0.80


def test_fit_text_names_the_priced_layout_and_the_other_one(data_dir: Path) -> None:
    out = vramlab("fit", "gpt-oss-20b", "--gpu", "rtx-4090", "--format", "bf16", "--engine", "vllm",
                  "--data-dir", str(data_dir))
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())  # rich wraps at 100 columns
    assert "TP 1 x PP 2 on 1 machine(s)" in text
    assert "cost of the plan shown: $1.00/h" in text and "1 x 2 GPUs (1 machine), TP 1 x PP 2" in text
    assert "other layout: a different layout: 2 x 1 GPU (2 machines), TP 1 x PP 2 with llama.cpp" in text
